"""The sandbox launcher: runs inside each program's process (`python -I -B -c <this file's text> <config json>`).

It never imports agentic_verl (the package is not visible inside the sandbox). In order:
1. full isolation (`config["namespaces"]`): new mount, pid, network, IPC and UTS namespaces; a new root (a tmpfs
   holding read-only binds of the Python installation, /usr and four /dev nodes, and private tmpfs /program and
   /tmp); chroot; fork the namespace's init (pid 1), which forks the program process and ends with it (when
   pid 1 ends the kernel kills everything left in the namespace);
2. in the program process: rlimits, the run's own uid/gid (full isolation), no_new_privs, not dumpable (no other
   process of the same uid can ptrace it or copy its file descriptors);
3. `run_to_the_end`: the verdict protocol (below).

Setup errors go to the result pipe as `setup-error: ...` (written by this trusted code, so a program cannot fake
one) and end the launcher with status 125.

The verdict protocol. The supervisor passes two pipes: `nonce_fd` holds a random nonce it wrote before the start,
`result_fd` carries the verdict back. The program (solution + tests + `check(entry_point)`) runs in a second
thread, T, which first unshares its file-descriptor table (`unshare(CLONE_FILES)`) and closes both pipes in its
copy: the program, every thread it starts and every process it forks use T's table, where the pipes do not exist
(there is no /proc to reopen them through, the process is not dumpable, and ctypes, which could call
pidfd_getfd on its own process, is refused by an audit hook). The main thread keeps the only copy of the pipes.
It waits until T reports, then checks where T is: only when T's own frame (captured before the program started)
stands on the line after `exec` returned - the program ran to its last statement, `check(entry_point)`, without
an exception - does it read the nonce and write it to `result_fd`. Anything else (an exception, SystemExit,
os._exit, a signal, a kill, a timeout, a program that releases T's lock early) leaves no nonce there, whatever
the exit status. The main thread runs no code the program can reach (functions bound before the program starts,
no allocation the cyclic GC could run finalizers in) before it has closed the pipes. The audit hook also refuses
sys.settrace/sys.setprofile (a trace function can jump over an assert) and adding other audit hooks.
The argument rests on CPython 3.11, where the cyclic GC (and with it the program's finalizers) runs in the thread
that allocates: 3.12+ runs it at the next eval-breaker check of any thread, which reopens a window of a few
bytecodes in the main thread between its wake-up and closing the pipes.
"""

import ctypes
import json
import os
import resource
import signal
import sys
import threading

CLONE_FILES, CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x400, 0x20000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
SETUP_FAILED = 125
REFUSED_EVENTS = frozenset({"sys.settrace", "sys.setprofile", "sys.addaudithook", "sys.monitoring.register_callback"})
DEV_NODES = ("null", "zero", "random", "urandom")
LIBC = ctypes.CDLL(None, use_errno=True)


def main() -> None:
    config = json.loads(sys.argv[1])
    try:
        if config["namespaces"]:
            enter_namespaces(config)  # returns in the program process only
        drop_privileges(config)
    except Exception as e:  # noqa: BLE001 - any setup failure is reported through the trusted pipe
        os.write(config["result_fd"], f"setup-error: {type(e).__name__}: {e}".encode())
        os._exit(SETUP_FAILED)
    run_to_the_end(config["nonce_fd"], config["result_fd"], config["done_line"])


def check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def mount(source, target, fstype, flags, data=None) -> None:
    encode = (lambda s: None if s is None else s.encode())  # noqa: E731
    check(LIBC.mount(encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags), encode(data)),
          f"mount {source} on {target}")


def enter_namespaces(config: dict) -> None:
    check(LIBC.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing mounted here propagates to the host
    build_root(config)
    os.chroot(config["root"])
    os.chdir("/program")
    init = os.fork()
    if init:
        close_pipes(config)
        os._exit(exit_code(os.waitpid(init, 0)[1]))
    # pid 1 of the new pid namespace: it dies with the launcher above it, and the namespace with it
    check(LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
    program = os.fork()
    if program:
        close_pipes(config)
        while True:  # reap whatever gets reparented here; end with the program
            pid, status = os.wait()
            if pid == program:
                os._exit(exit_code(status))


def build_root(config: dict) -> None:
    root, uid, gid = config["root"], config["uid"], config["gid"]
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
    for name in ("bin", "lib", "lib64", "sbin"):  # the usual links into /usr
        if os.path.islink("/" + name):
            os.symlink(os.readlink("/" + name), f"{root}/{name}")
    size = f"size={config['tmpfs_bytes']},mode=700,uid={uid},gid={gid}"
    for folder in ("program", "tmp"):  # private, memory-backed, gone with the namespace
        os.makedirs(f"{root}/{folder}")
        mount("tmpfs", f"{root}/{folder}", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, size)
    with open(config["program"], "rb") as src, open(f"{root}/program/program.py", "wb") as dst:
        dst.write(src.read())
    os.chown(f"{root}/program/program.py", uid, gid)
    for path in config["read_only"]:  # after /tmp: an installation under /tmp stays visible
        bind(path, root + path, MS_NOSUID | MS_NODEV)
    os.makedirs(f"{root}/dev")
    for name in DEV_NODES:
        if os.path.exists(f"/dev/{name}"):
            bind(f"/dev/{name}", f"{root}/dev/{name}", MS_NOSUID | MS_NOEXEC)
    if os.path.exists("/etc/ld.so.cache"):  # where the dynamic loader finds system libraries; nothing else of /etc
        bind("/etc/ld.so.cache", f"{root}/etc/ld.so.cache", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    mount(None, root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def bind(source: str, target: str, flags: int) -> None:
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "w").close()
    mount(source, target, None, MS_BIND | MS_REC)
    mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)


def close_pipes(config: dict) -> None:
    os.close(config["nonce_fd"])
    os.close(config["result_fd"])


def exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def drop_privileges(config: dict) -> None:
    for limit, value in ((resource.RLIMIT_CPU, (config["cpu_s"], config["cpu_s"] + 1)),
                         (resource.RLIMIT_AS, (config["memory_bytes"],) * 2),
                         (resource.RLIMIT_FSIZE, (config["file_bytes"],) * 2),
                         (resource.RLIMIT_CORE, (0, 0))):
        resource.setrlimit(limit, value)
    if config["uid"] >= 0:  # a uid of its own: the process limit counts this program's processes only
        resource.setrlimit(resource.RLIMIT_NPROC, (config["max_processes"],) * 2)
        os.setgroups([])
        os.setgid(config["gid"])
        os.setuid(config["uid"])  # drops every capability
    check(LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    check(LIBC.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
    if config["namespaces"]:  # setuid cleared it: die with the namespace's init
        check(LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")


def refuse(event, args):
    if event in REFUSED_EVENTS or event[:7] == "ctypes.":
        raise PermissionError(f"the sandbox refuses {event}")


def run_to_the_end(nonce_fd: int, result_fd: int, done_line: int) -> None:
    """The verdict protocol (module docstring). Everything the main thread calls after the program starts is bound
    here, before it starts, so that patching os or sys cannot run code of the program's in the main thread."""
    read, write, close, exit_, unshare, get_errno = os.read, os.write, os.close, os._exit, LIBC.unshare, ctypes.get_errno
    with open("program.py", encoding="utf-8") as f:
        source = f.read()
    ready, go, done, hold = (threading.Lock() for _ in range(4))
    for lock in (ready, go, done, hold):
        lock.acquire()
    box = []

    def program_thread():
        box.append(sys._getframe())
        if unshare(CLONE_FILES) != 0:
            box.append(get_errno())
            ready.release()
            return
        close(nonce_fd)
        close(result_fd)
        ready.release()
        go.acquire()
        try:
            code = compile(source, "program.py", "exec")
            exec(code, {"__name__": "__main__", "__file__": "program.py", "__builtins__": __builtins__})
        except BaseException as e:  # noqa: BLE001 - the program's own failure, reported on its stderr
            import traceback

            traceback.print_exception(e.with_traceback(e.__traceback__.tb_next))  # from the program's frame on
            sys.stderr.flush()
            done.release()
            return
        done.release(); hold.acquire()  # noqa: E702 - the line the main thread looks for (done_line)

    threading.Thread(target=program_thread, name="program", daemon=True).start()
    ready.acquire()
    frame = box[0]
    if len(box) > 1:
        write(result_fd, f"setup-error: unshare(CLONE_FILES): {os.strerror(box[1])}".encode())
        exit_(SETUP_FAILED)
    sys.addaudithook(refuse)
    go.release()
    verdict = b"failed"
    try:
        done.acquire()
        if frame.f_lineno == done_line:
            verdict = read(nonce_fd, 64)
    except BaseException:  # noqa: BLE001, S110 - an interrupt of the main thread is a failure, never a pass
        pass
    write(result_fd, verdict)
    close(result_fd)
    close(nonce_fd)
    try:  # from here on the program may run code here: it can no longer reach the pipes
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        exit_(0)


if __name__ == "__main__":
    main()
