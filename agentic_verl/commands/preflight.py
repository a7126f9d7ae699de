"""`agentic-verl preflight rag-r1 | gui | bfcl-mt | data-mode`: the checks the RAG-R1, V2P and FunReason-MT recipes
run before they launch verl.

    agentic-verl preflight rag-r1 --stage grpo --train data/rag_r1/train.parquet --val data/rag_r1/test.parquet \\
        --model Qwen/Qwen2.5-7B-Instruct --retrieval-url http://127.0.0.1:8000 --n-gpus 8 --gpu-memory-gb 80
    agentic-verl preflight rag-r1 --stage grpo -- data.train_files=... actor_rollout_ref.model.path=...  # as verl gets them
    agentic-verl preflight bfcl-mt -- data.train_files=... actor_rollout_ref.model.path=... \\
        +actor_rollout_ref.rollout.custom.bfcl_multi_turn.env_url=URL     # recipes/funreason_mt/grpo.sh
    agentic-verl preflight data-mode data/rag_r1/train.parquet       # prints sq or mq
    agentic-verl preflight gui -- data.train_files=... actor_rollout_ref.model.path=...   # recipes/v2p/grpo_click.sh
    agentic-verl preflight gui --stage sft -- data.train_files=... model.path=...        # recipes/v2p/sft_{warmup,full}.sh
    agentic-verl preflight gui --stage sft-click -- data.train_files=... model.path=...  # recipes/v2p/sft_click.sh

Prints every finding (ok / note / FAIL) and exits 1 when anything FAILs (see agentic_verl/preflight/).
"""

from __future__ import annotations

import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser("preflight", help="check data, models, retrieval server and GPU memory before a "
                                                     "recipe launches verl")
    sub = parser.add_subparsers(dest="preflight_command", metavar="CHECK")
    parser.set_defaults(handler=lambda args: parser.print_help() or 2)

    p = sub.add_parser("rag-r1", help="the RAG-R1 recipes (sft.sh, ppo.sh, grpo.sh)")
    p.add_argument("--stage", required=True, choices=("sft", "ppo", "grpo"))
    p.add_argument("--train", help="training parquet (or set by data.train_files=...)")
    p.add_argument("--val", help="validation parquet (optional)")
    p.add_argument("--model", help="policy model: a local folder or a Hub id")
    p.add_argument("--critic-model", help="ppo: the critic's model (default: --model)")
    p.add_argument("--retrieval-url", help="the /retrieve server (ppo, grpo)")
    p.add_argument("--mode", choices=("sq", "mq"), help="the run's mode (rollout.custom.rag_r1.mode); must match the data's")
    p.add_argument("--device", choices=("cuda", "cpu"), help="cpu skips the GPU memory budget")
    p.add_argument("--n-gpus", type=int, help="GPUs per node")
    p.add_argument("--nnodes", type=int)
    p.add_argument("--gpu-memory-gb", type=float, help="memory of one GPU in GiB (default: nvidia-smi)")
    p.add_argument("--gpu-memory-utilization", type=float, help="vLLM's share of a GPU (default: verl's 0.5)")
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                   help="the verl overrides the recipe launches with (after --); they win over the flags")
    p.set_defaults(handler=_rag_r1)

    p = sub.add_parser("gui", help="recipes/v2p/: gui_grounding data, a Qwen2.5-VL (sft: a V2P model), GPU memory")
    p.add_argument("--stage", choices=("grpo", "sft", "sft-click"), default="grpo",
                   help="grpo: grpo_click.sh; sft: sft_warmup.sh / sft_full.sh; sft-click: sft_click.sh")
    p.add_argument("--gpu-memory-gb", type=float, help="memory of one GPU in GiB (default: nvidia-smi)")
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="the verl overrides the recipe launches with")
    p.set_defaults(handler=_gui)

    p = sub.add_parser("bfcl-mt", help="recipes/funreason_mt/: bfcl_multi_turn data, model, the BFCL environment "
                                       "server (or .venv-bfcl), GPU memory")
    p.add_argument("--stage", choices=("grpo", "sft"), default="grpo", help="grpo: grpo.sh; sft: sft.sh")
    p.add_argument("--gpu-memory-gb", type=float, help="memory of one GPU in GiB (default: nvidia-smi)")
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                   help="the verl overrides the recipe launches with (env_url: +actor_rollout_ref.rollout.custom."
                        "bfcl_multi_turn.env_url=URL; without it .venv-bfcl is checked instead of a server)")
    p.set_defaults(handler=_bfcl_mt)

    p = sub.add_parser("data-mode", help="print the mode (sq or mq) a rag_r1 parquet was written for")
    p.add_argument("file")
    p.set_defaults(handler=_data_mode)


def _rag_r1(args) -> int:
    from agentic_verl.preflight import RagR1Settings, check_rag_r1, settings_from_overrides

    flags = {"train": args.train, "val": args.val, "model": args.model, "critic_model": args.critic_model,
             "retrieval_url": args.retrieval_url, "mode": args.mode, "device": args.device, "n_gpus": args.n_gpus,
             "nnodes": args.nnodes, "gpu_memory_gb": args.gpu_memory_gb,
             "gpu_memory_utilization": args.gpu_memory_utilization}
    settings = RagR1Settings(stage=args.stage, **{k: v for k, v in flags.items() if v is not None})
    settings = settings_from_overrides(settings, args.overrides)
    return _verdict(f"rag-r1 ({args.stage})", check_rag_r1, settings)


def _gui(args) -> int:
    from agentic_verl.preflight import RagR1Settings, settings_from_overrides
    from agentic_verl.preflight.gui import check_gui

    settings = RagR1Settings(stage="grpo" if args.stage == "grpo" else "sft", gpu_memory_gb=args.gpu_memory_gb)
    settings = settings_from_overrides(settings, args.overrides)
    return _verdict(f"gui ({args.stage})", lambda s: check_gui(s, args.stage), settings)


def _bfcl_mt(args) -> int:
    from agentic_verl.preflight import RagR1Settings, settings_from_overrides
    from agentic_verl.preflight.bfcl_mt import check_bfcl_mt

    settings = RagR1Settings(stage=args.stage, gpu_memory_gb=args.gpu_memory_gb)
    settings = settings_from_overrides(settings, args.overrides)
    return _verdict(f"bfcl-mt ({args.stage})", lambda s: check_bfcl_mt(s, args.stage), settings)


def _verdict(title: str, check, settings) -> int:
    """Run `check` on `settings` (verl's val_files=null means no validation file), print every finding, exit code."""
    if settings.val in ("null", ""):
        settings.val = None
    report = check(settings)
    print(f"agentic-verl preflight {title}:")
    print(report.render(), flush=True)
    if report.problems:
        print(f"preflight: {len(report.problems)} problem(s); not launching. Fix them, or skip every check with "
              "PREFLIGHT=0.", file=sys.stderr)
        return 1
    return 0


def _data_mode(args) -> int:
    from agentic_verl.data.rag_r1_parquet import read_mode

    print(read_mode(args.file))
    return 0
