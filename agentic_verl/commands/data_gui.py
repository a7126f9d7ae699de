"""`agentic-verl data gui`: GUI grounding datasets from local folders -> verl parquet with the screenshots embedded.

    agentic-verl data gui --data data/GUI-Actor/uground.json --images data/GUI-Actor/images --out data/v2p/train.parquet
    agentic-verl data gui --data data/ScreenSpot-v2 --split test --out data/v2p/screenspot_v2.parquet
    agentic-verl data gui --data DIR --target text-click --out data/v2p/click_sft.parquet   # text-click SFT rows
    agentic-verl data gui-world --seed 0 --out outputs/v2p_demo/world    # the synthetic world (V2P miniature)

Layouts and each set's box convention: agentic_verl/data/gui_grounding.py. Rows carry `prompt` (the gui_grounding
agent loop), `messages` (V2P SFT target with the pointer tokens), `images`, the box in original pixels as ground
truth, and the sample's metadata in `extra_info`; `--target text-click` makes `messages` a text-click SFT sample
(`pyautogui.click(x=.., y=..)` at the box centre, in pixels of the resized screenshot the prompt states). `gui-world`
writes the synthetic world's train and held-out screens in ScreenSpot's layout (agentic_verl/data/gui_world.py).
Joins the `data` group through `register_subcommands`
(commands/data.py: SUBCOMMAND_MODULES).
"""

from __future__ import annotations


def register_subcommands(sub) -> None:
    from agentic_verl.data.gui_grounding import LAYOUTS, TARGETS

    p = sub.add_parser("gui", help="ScreenSpot / -v2 / -Pro / GUI-Actor-style data -> verl parquet (images embedded)")
    p.add_argument("--data", nargs="+", required=True, help="dataset folders or GUI-Actor JSON files")
    p.add_argument("--layout", choices=("auto", *LAYOUTS), default="auto")
    p.add_argument("--images", default=None, help="gui_actor: the image folder (default: next to the JSON)")
    p.add_argument("--benchmark", default=None, help="data_source name (default: from the layout)")
    p.add_argument("--limit", type=int, default=None, help="first N samples of each input")
    p.add_argument("--split", default="train")
    p.add_argument("--target", choices=TARGETS, default="pointer",
                   help="the SFT answer in `messages`: V2P's pointer action (default) or a text click at the box "
                        "centre, in pixels of the resized screenshot (the prompt then states its size)")
    p.add_argument("--min-pixels", type=int, default=None,
                   help="text-click: the processor's resize floor (default Qwen2.5-VL-7B's 3136)")
    p.add_argument("--max-pixels", type=int, default=None,
                   help="text-click: the processor's resize cap (default Qwen2.5-VL-7B's 16384*28*28)")
    p.add_argument("--out", required=True, help="output parquet")
    p.set_defaults(handler=_gui)

    p = sub.add_parser("gui-world", help="a synthetic GUI world: train + held-out screens in ScreenSpot's layout",
                       description="Screens of widgets (buttons with invented labels, coloured icons) at random "
                       "places and sizes, one instruction per widget, from GuiWorld (agentic_verl/v2p/synthetic.py); "
                       "writes OUT/train, OUT/dev, OUT/test (SeeClick layout: `data gui` and `eval screenspot` read them) "
                       "and OUT/world.json with the held-out splits' baselines (centre click, random widget).")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--seed", type=int, default=0, help="the world (labels, colours, every screen)")
    p.add_argument("--train-screens", type=int, default=400)
    p.add_argument("--dev-screens", type=int, default=30, help="held-out screens for choosing settings (0: none)")
    p.add_argument("--test-screens", type=int, default=30, help="held-out screens for reporting")
    p.add_argument("--size", default="224x168", help="screenshot WIDTHxHEIGHT (default 224x168: 8x6 patches)")
    p.add_argument("--widgets", type=int, nargs=2, default=(3, 5), metavar=("MIN", "MAX"), help="widgets per screen")
    p.add_argument("--labels", type=int, default=6, help="invented button labels in the world")
    p.add_argument("--shared-colours", action="store_true", help="widgets of a screen may share a colour")
    p.add_argument("--grey-buttons", action="store_true", help="every button grey: only its text tells it apart")
    p.set_defaults(handler=_gui_world)


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
    out = write_parquet(samples, args.out, split=args.split, target=args.target, min_pixels=args.min_pixels,
                        max_pixels=args.max_pixels)
    print(f"data gui: {len(samples)} samples -> {out}")
    return 0


def _gui_world(args) -> int:
    from agentic_verl.data.gui_world import write_world
    from agentic_verl.v2p.synthetic import WorldConfig

    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        raise SystemExit(f"--size must be WIDTHxHEIGHT, got {args.size!r}") from None
    if args.train_screens < 1 or args.test_screens < 1 or args.dev_screens < 0:
        raise SystemExit("--train-screens and --test-screens must be >= 1, --dev-screens >= 0")
    config = WorldConfig(size=(width, height), widgets=tuple(args.widgets), labels=args.labels,
                         distinct_colours=not args.shared_colours, label_colours=not args.grey_buttons)
    world = write_world(args.out, args.seed, args.train_screens, args.test_screens, args.dev_screens, config)
    splits = world["splits"]
    for split, counts in splits.items():
        sizes = ", ".join(f"{n} {size}" for size, n in counts["by_size"].items())
        print(f"gui-world {split}: {counts['screens']} screens, {counts['samples']} samples ({sizes}) -> "
              f"{args.out}/{split}")
    for split, base in world["baselines"].items():
        print(f"baselines on {split}: centre click {base['centre']['accuracy']:.3f}, random widget "
              f"{base['random_widget']['accuracy']:.3f}")
    print(f"labels: {world['labels']}")
    return 0

