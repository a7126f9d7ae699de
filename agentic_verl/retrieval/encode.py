"""`agentic-verl index encode`: a corpus's passage vectors, encoded by Ray workers into an embeddings folder
(embeddings.py) that `index build --backend dense --embeddings DIR` indexes without encoding.

- Streamed: the driver reads the corpus once, `shard_size` passages at a time, and hands each shard's texts to the
  least busy worker (at most 2 shards queued per worker), so it holds a few shards, never the corpus.
- Workers: `EncodeWorker` Ray actors with `gpus_per_worker` GPUs each (default 1 when the cluster has GPUs, else 0:
  CPU) and 1 CPU, each running dense_encoder.Encoder: the same model loading, passage prefix
  (dense_encoder.resolve_convention) and normalisation as an in-process `index build --backend dense`, so both give
  the same vectors.
- Output: each shard comes back to the driver, which writes it atomically and only then marks it done in
  manifest.json (embeddings.py). A progress bar shows passages/s and the ETA.
- Failures: a worker that dies (killed, preempted, out of memory) is replaced and its shards are sent again, up to
  `MAX_ATTEMPTS` times a shard; an exception inside encoding stops the run (`EncodeError`). After a crash, Ctrl-C
  or a full disk the finished shards stay: `resume=True` checks the model, convention, corpus (sha256) and shard
  size against the manifest, refuses a difference, drops half-written files and encodes only the missing shards.
"""

from __future__ import annotations

import itertools
import os
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

from tqdm import tqdm

from agentic_verl.retrieval.backends.dense_encoder import Encoder, TextConvention, describe
from agentic_verl.retrieval.corpus import iter_lines, parse_line
from agentic_verl.retrieval.disk_full import resumable_when_disk_full
from agentic_verl.retrieval.embeddings import plan_folder, reopen_folder, resume_command, write_manifest, write_shard

DEFAULT_SHARD_SIZE = 100_000  # passages a shard: ~300 MB of 768-d float32 vectors, ~30 s of e5-base on one GPU
PER_WORKER = 2  # shards queued per worker: one encoding, the next one ready
MAX_ATTEMPTS = 3  # workers a shard may be sent to before the run stops


class EncodeError(RuntimeError):
    """An encode run that cannot go on; the message says why and how to resume."""


class EncodeWorker:
    """One encoder (a Ray actor): dense_encoder.Encoder for `model` with the passage prefix of `convention`."""

    def __init__(self, model: str, convention: TextConvention, batch_size: int, device: str):
        self.model, self.encoder = model, Encoder(model, convention, batch_size=batch_size, device=device)

    def describe(self) -> dict:
        return {**describe(self.encoder, self.model), "pid": os.getpid(), "device": str(self.encoder.model.device)}

    def encode(self, texts: list[str]):
        return self.encoder.passages(texts)


def encode_corpus(corpus: str | Path | None, model: str | None, out_dir: str | Path, *, convention: str | None = None,
                  query_prefix: str | None = None, passage_prefix: str | None = None, workers: int | None = None,
                  gpus_per_worker: float | None = None, batch_size: int = 64, shard_size: int | None = None,
                  resume: bool = False, ray_address: str | None = None, ray_temp_dir: str | None = None,
                  show_progress: bool = True, on_shard: Callable[[int], None] | None = None) -> dict:
    """Encode `corpus` into the embeddings folder `out_dir` (or finish it, `resume`); return a summary of the run.

    Uses the connected Ray cluster if `ray.init` was called, else joins `ray_address` or starts a local one.
    `on_shard(shard)` runs after each shard is recorded (tests inject crashes there)."""
    import ray

    for name, value in (("workers", workers), ("batch_size", batch_size), ("shard_size", shard_size)):
        if value is not None and int(value) < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    if gpus_per_worker is not None and gpus_per_worker < 0:
        raise ValueError(f"gpus_per_worker must be >= 0, got {gpus_per_worker}")
    out_dir = Path(out_dir)
    text = (convention or "auto", query_prefix, passage_prefix)  # resolved for the model (dense_encoder.resolve_convention)
    if resume:
        given = None if (convention, query_prefix, passage_prefix) == (None, None, None) else text
        manifest = reopen_folder(out_dir, corpus, model, given, shard_size)
    else:
        manifest = plan_folder(out_dir, corpus, model, text, int(shard_size or DEFAULT_SHARD_SIZE))
    todo = [i for i, shard in enumerate(manifest["shards"]) if not shard["done"]]
    summary = {"out": str(out_dir), "passages": manifest["corpus"]["passages"], "shards": len(manifest["shards"]),
               "encoded": [], "skipped": len(manifest["shards"]) - len(todo), "workers_replaced": 0}
    if not todo:
        return summary
    started_ray = not ray.is_initialized()
    if started_ray:
        from agentic_verl.retrieval.replicas import start_ray

        start_ray(ray_address, ray_temp_dir)
    try:
        gpus = _gpus_per_worker(ray.cluster_resources(), gpus_per_worker)
        workers = min(int(workers or max(1, ray.cluster_resources().get("GPU", 0) // gpus if gpus else 1)), len(todo))
        _check_resources(ray.cluster_resources(), workers, gpus)
        summary.update(workers=workers, gpus_per_worker=gpus)
        started = time.time()
        _Run(ray, out_dir, manifest, workers, gpus, batch_size, show_progress, on_shard, summary).run(todo)
        seconds = time.time() - started - summary["startup_seconds"]  # encoding, once the workers had the model
        summary.update(seconds=round(seconds, 3), passages_per_s=round(
            sum(manifest["shards"][s]["rows"] for s in summary["encoded"]) / max(seconds, 1e-9), 1))
    finally:
        if started_ray:
            ray.shutdown()
    return summary


class _Run:
    """The driver's loop: feed shards to the workers, write what comes back, replace workers that die."""

    def __init__(self, ray, folder: Path, manifest: dict, workers: int, gpus: float, batch_size: int,
                 show_progress: bool, on_shard, summary: dict):
        self.ray, self.folder, self.manifest, self.summary, self.on_shard = ray, folder, manifest, summary, on_shard
        text = TextConvention(manifest["convention"], manifest["query_prefix"], manifest["passage_prefix"])
        self._actor, self._gpus = ray.remote(EncodeWorker), gpus
        self._args = (manifest["model"], text, batch_size, "cuda" if gpus else "cpu")
        self._names = (f"encode-{uuid.uuid4().hex[:8]}-{n}" for n in itertools.count())
        self.actors = [self._start() for _ in range(workers)]
        self.load = [0] * workers
        self.show_progress, self.bar = show_progress, None
        self._clock = time.time()

    def _start(self):
        from agentic_verl.retrieval.replicas import NAMESPACE

        return self._actor.options(num_cpus=1, num_gpus=self._gpus, max_restarts=0, name=next(self._names),
                                   namespace=NAMESPACE).remote(*self._args)

    def run(self, todo: list[int]) -> None:
        from ray.exceptions import RayActorError, RayTaskError

        try:
            self._describe()
            self.summary["startup_seconds"] = round(time.time() - self._clock, 3)
            done_rows = sum(s["rows"] for s in self.manifest["shards"] if s["done"])
            self.bar = tqdm(total=self.manifest["corpus"]["passages"], initial=done_rows, desc="encode",
                            unit=" passages", disable=not self.show_progress, dynamic_ncols=True)
            jobs, retries, in_flight = _shard_texts(self.manifest, set(todo)), deque(), {}
            while True:
                self._fill(in_flight, retries, jobs)
                if not in_flight:
                    return
                [ref], _ = self.ray.wait(list(in_flight), num_returns=1)
                slot, actor, job = in_flight.pop(ref)
                self.load[slot] -= 1
                try:
                    vectors = self.ray.get(ref)
                except RayActorError as exc:  # the worker died: replace it (once), send its shards again
                    if job[3] >= MAX_ATTEMPTS:
                        raise EncodeError(f"shard {job[0]} was lost with {MAX_ATTEMPTS} workers (last: "
                                          f"{str(exc).splitlines()[0]}); resume with: {resume_command(self.folder)}") from exc
                    if self.actors[slot] is actor:
                        self.ray.kill(actor, no_restart=True)
                        self.actors[slot] = self._start()
                        self.summary["workers_replaced"] += 1
                    retries.append(job)
                    continue
                except RayTaskError as exc:
                    raise EncodeError(f"encoding shard {job[0]} failed: {str(exc).splitlines()[0]}; finished shards "
                                      f"are kept, resume with: {resume_command(self.folder)}") from exc
                self._record(job[0], job[1], vectors)
        finally:
            if self.bar is not None:
                self.bar.close()
            for actor in self.actors:
                self.ray.kill(actor, no_restart=True)

    def _fill(self, in_flight: dict, retries: deque, jobs: Iterator) -> None:
        """Queue shards (lost ones first) on the least busy workers until each has PER_WORKER."""
        while True:
            slot = min(range(len(self.actors)), key=self.load.__getitem__)
            if self.load[slot] >= PER_WORKER:
                return
            job = retries.popleft() if retries else next(jobs, None)
            if job is None:
                return
            shard, ids, texts, attempts = job
            if not isinstance(texts, self.ray.ObjectRef):  # kept in Ray's object store while the shard is out
                texts = self.ray.put(texts)
            actor = self.actors[slot]
            in_flight[actor.encode.remote(texts)] = (slot, actor, (shard, ids, texts, attempts + 1))
            self.load[slot] += 1

    def _describe(self) -> None:
        """Wait for every worker's model; the first run of a folder records its encoder (dim, max length)."""
        from ray.exceptions import RayError

        try:
            infos = self.ray.get([actor.describe.remote() for actor in self.actors])
        except RayError as exc:
            raise EncodeError(f"the encode workers could not load model {self.manifest['model']!r}: "
                              f"{str(exc).splitlines()[0]}") from None
        info = infos[0]
        if self.manifest["dim"] is None:  # a new folder: written now that the workers run
            self.manifest.update({key: info[key] for key in ("dim", "max_seq_length")})
            self.folder.mkdir(parents=True, exist_ok=True)
            write_manifest(self.folder, self.manifest)
        elif info["dim"] != self.manifest["dim"]:
            raise EncodeError(f"model {self.manifest['model']} gives {info['dim']}-d vectors, {self.folder} holds "
                              f"{self.manifest['dim']}-d ones")
        self.summary["devices"] = sorted({i["device"] for i in infos})

    def _record(self, shard: int, ids: list[str], vectors) -> None:
        entry = self.manifest["shards"][shard]
        if vectors.shape != (entry["rows"], self.manifest["dim"]):
            raise EncodeError(f"shard {shard}: a worker returned {vectors.shape}, expected ({entry['rows']}, "
                              f"{self.manifest['dim']})")
        with resumable_when_disk_full(f"writing shard {shard} to {self.folder}", resume_command(self.folder)):
            write_shard(self.folder, shard, vectors, ids)
            entry.update(done=True, first_id=ids[0], last_id=ids[-1])
            now = time.time()
            self.manifest["encode_seconds"] = round(self.manifest["encode_seconds"] + now - self._clock, 3)
            self._clock = now
            write_manifest(self.folder, self.manifest)
        self.summary["encoded"].append(shard)
        self.bar.update(entry["rows"])
        if self.on_shard is not None:
            self.on_shard(shard)


def _shard_texts(manifest: dict, todo: set[int]) -> Iterator[tuple[int, list[str], list[str], int]]:
    """(shard, ids, texts, attempts=0) for each shard in `todo`, streamed from the corpus; other rows are skipped
    unparsed, and reading stops after the last shard wanted."""
    lines = iter_lines(manifest["corpus"]["path"])
    for shard, entry in enumerate(manifest["shards"]):
        if not todo:
            return
        rows = itertools.islice(lines, entry["rows"])
        if shard in todo:
            todo.discard(shard)
            passages = [parse_line(line, where) for where, line in rows]
            read = len(passages)
        else:
            passages, read = [], sum(1 for _ in rows)
        if read != entry["rows"]:
            raise EncodeError(f"{manifest['corpus']['path']} ended early: the corpus changed during the encode")
        if passages:
            yield shard, [p.id for p in passages], [p.contents for p in passages], 0


def _gpus_per_worker(resources: dict, wanted: float | None) -> float:
    if wanted is None:
        return 1.0 if resources.get("GPU", 0) >= 1 else 0.0
    return float(wanted)


def _check_resources(resources: dict, workers: int, gpus: float) -> None:
    for key, each in (("CPU", 1.0), ("GPU", gpus)):
        if each and workers * each > resources.get(key, 0):
            raise ValueError(f"{workers} encode worker(s) x {each:g} {key} need {workers * each:g} {key}, but the Ray "
                             f"cluster has {resources.get(key, 0):g}; lower --workers / --gpus-per-worker or add nodes")
