"""`agentic-verl data gui`: GUI grounding datasets from local folders -> verl parquet with the screenshots embedded.

    agentic-verl data gui --data data/GUI-Actor/uground.json --images data/GUI-Actor/images --out data/v2p/train.parquet
    agentic-verl data gui --data data/ScreenSpot-v2 --split test --out data/v2p/screenspot_v2.parquet

Layouts and each set's box convention: agentic_verl/data/gui_grounding.py. Rows carry `prompt` (the gui_grounding
agent loop), `messages` (V2P SFT target with the pointer tokens), `images`, the box in original pixels as ground
truth, and the sample's metadata in `extra_info`. Joins the `data` group through `register_subcommands`
(commands/data.py: SUBCOMMAND_MODULES).
"""

from __future__ import annotations


def register_subcommands(sub) -> None:
    from agentic_verl.data.gui_grounding import LAYOUTS

    p = sub.add_parser("gui", help="ScreenSpot / -v2 / -Pro / GUI-Actor-style data -> verl parquet (images embedded)")
    p.add_argument("--data", nargs="+", required=True, help="dataset folders or GUI-Actor JSON files")
    p.add_argument("--layout", choices=("auto", *LAYOUTS), default="auto")
    p.add_argument("--images", default=None, help="gui_actor: the image folder (default: next to the JSON)")
    p.add_argument("--benchmark", default=None, help="data_source name (default: from the layout)")
    p.add_argument("--limit", type=int, default=None, help="first N samples of each input")
    p.add_argument("--split", default="train")
    p.add_argument("--out", required=True, help="output parquet")
    p.set_defaults(handler=_gui)


def _gui(args) -> int:
    from pathlib import Path

    from agentic_verl.data.gui_grounding import detect_layout, load_grounding, load_gui_actor, write_parquet

    samples = []
    for path in args.data:
        layout = detect_layout(path) if args.layout == "auto" else args.layout
        if layout == "gui_actor" and args.images:
            found = load_gui_actor(Path(path), benchmark=args.benchmark, image_folder=args.images)
            samples += found[: args.limit] if args.limit else found
        else:
            samples += load_grounding(path, layout=layout, limit=args.limit, benchmark=args.benchmark)
    out = write_parquet(samples, args.out, split=args.split)
    print(f"data gui: {len(samples)} samples -> {out}")
    return 0

