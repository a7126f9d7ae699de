"""`agentic-verl cpu-cleanup`: what `recipes/_common/device.sh` runs around a CPU run (see agentic_verl/cpu/cleanup.py).

    agentic-verl cpu-cleanup --snapshot F                     # at start: remember today's /dev/shm segments
    agentic-verl cpu-cleanup --ray-dir DIR --shm-snapshot F   # at exit: stop the run's Ray processes, then
                                                              # remove the segments it left that nothing maps
"""

from __future__ import annotations


def register(subparsers) -> None:
    parser = subparsers.add_parser("cpu-cleanup", help="stop a CPU run's Ray processes and remove its orphaned /dev/shm segments")
    parser.add_argument("--snapshot", help="write the current /dev/shm segment names to this file and exit")
    parser.add_argument("--shm-snapshot", help="remove orphaned segments that are not in this snapshot file")
    parser.add_argument("--ray-dir", help="stop processes whose command line names this Ray session folder")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from agentic_verl.cpu.cleanup import cleanup_after_run, write_snapshot

    if args.snapshot:
        write_snapshot(args.snapshot)
        return 0
    if not (args.ray_dir or args.shm_snapshot):
        raise ValueError("cpu-cleanup needs --snapshot F, or --ray-dir DIR and/or --shm-snapshot F")
    cleanup_after_run(ray_dir=args.ray_dir, shm_snapshot=args.shm_snapshot)
    return 0
