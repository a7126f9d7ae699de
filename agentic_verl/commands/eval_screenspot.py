"""`agentic-verl eval screenspot`: GUI grounding accuracy (click inside the box) on ScreenSpot, ScreenSpot-v2 and
ScreenSpot-Pro from local folders, the published rows beside ours, and an HTML report with every click drawn.

    agentic-verl eval screenspot --model outputs/v2p/hf --data data/ScreenSpot-v2 data/ScreenSpot-Pro --out OUT
    agentic-verl eval screenspot --endpoint http://127.0.0.1:8001 --model-name Qwen2.5-VL-7B-Instruct \\
        --data data/ScreenSpot-v2 --out OUT

The work is `agentic_verl.eval.screenspot` (loaders: `agentic_verl.data.gui_grounding`; predictors:
`agentic_verl.v2p.predictors`). `add_screenspot(sub)` adds the parser to the `eval` group.
Writes OUT/result.json, OUT/table.md and OUT/report.html.
"""

from __future__ import annotations

from pathlib import Path

from agentic_verl.commands._model_source import add_api_key_env
from agentic_verl.commands._settings_defaults import defaults_of


def add_screenspot(sub) -> None:
    from agentic_verl.data.gui_grounding import LAYOUTS
    from agentic_verl.eval.screenspot import ScreenSpotSettings
    from agentic_verl.v2p.predictors import COORD_SYSTEMS

    default = defaults_of(ScreenSpotSettings)
    p = sub.add_parser("screenspot", help="GUI grounding: click-in-box accuracy on ScreenSpot / -v2 / -Pro, the "
                                          "published rows beside ours, an HTML report with the clicks drawn",
                       description="Each screenshot + instruction goes to the model; a click inside the ground-truth "
                       "box is a hit. --model: a V2P pointer model (agentic_verl.v2p.model; its heatmap is drawn in "
                       "the report) or any Qwen2.5-VL folder (greedy text click), run in-process; --endpoint: an "
                       "OpenAI-compatible chat-completions server. Writes OUT/result.json, table.md, report.html.")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="HF model folder, run in-process (transformers)")
    source.add_argument("--endpoint", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8001 (vllm serve)")
    p.add_argument("--model-name", help="with --endpoint: the name the server serves the model under")
    add_api_key_env(p)
    p.add_argument("--data", nargs="+", required=True,
                   help=f"dataset folders (layouts: {', '.join(LAYOUTS)}; see agentic_verl/data/gui_grounding.py)")
    p.add_argument("--layout", choices=("auto", *LAYOUTS), default=default("layout"))
    p.add_argument("--benchmark", default=None, help="benchmark name for the table (default: from the layout)")
    p.add_argument("--out", default=None, help="folder for result.json, table.md and report.html")
    p.add_argument("--label", default="", help="name of this run in the table (default: the model's name)")
    p.add_argument("--limit", type=int, default=None, help="first N samples of each dataset")
    p.add_argument("--min-pixels", type=int, default=None, help="resize floor (default: the processor's)")
    p.add_argument("--max-pixels", type=int, default=None, help="resize cap (default: the processor's; endpoint: "
                                                                "Qwen2.5-VL-7B's 16384*28*28)")
    p.add_argument("--coord-system", choices=COORD_SYSTEMS, default=default("coord_system"),
                   help="text clicks: absolute = pixels of the resized image (Qwen2.5-VL), normalized (0-1), "
                        "thousandths (0-1000)")
    p.add_argument("--max-tokens", type=int, default=default("max_tokens"), help="text predictors: new tokens")
    p.add_argument("--threshold", type=float, default=None, help="pointer models: region threshold (default 0.3)")
    p.add_argument("--dtype", default=default("dtype"), help="auto | float32 | bfloat16 (in-process models)")
    p.add_argument("--concurrency", type=int, default=default("concurrency"), help="endpoint requests in flight")
    p.add_argument("--report-samples", type=int, default=300, help="samples drawn in report.html (first N; 0: no "
                                                                   "report)")
    p.set_defaults(handler=_screenspot)


def _screenspot(args) -> int:
    from agentic_verl.eval.screenspot import (
        ScreenSpotSettings,
        evaluate,
        format_breakdown_table,
        format_paper_table,
        write_result,
    )
    from agentic_verl.eval.screenspot_report import ScreenSpotReport

    if args.model_name and not args.endpoint:
        raise SystemExit("--model-name goes with --endpoint (an in-process --model is named by its folder)")
    settings = ScreenSpotSettings(
        data=args.data, model=args.model, endpoint=args.endpoint, model_name=args.model_name,
        api_key_env=args.api_key_env, layout=args.layout,
        benchmark=args.benchmark, label=args.label, limit=args.limit, min_pixels=args.min_pixels,
        max_pixels=args.max_pixels, coord_system=args.coord_system, max_tokens=args.max_tokens,
        threshold=args.threshold, dtype=args.dtype, concurrency=args.concurrency)
    report = ScreenSpotReport(max_samples=args.report_samples) if args.out and args.report_samples > 0 else None
    result = evaluate(settings, report=report)
    print(format_paper_table(result), format_breakdown_table(result), sep="\n\n")
    if args.out:
        path = write_result(result, args.out)
        written = [str(path), str(Path(args.out) / "table.md")]
        if report is not None:
            (Path(args.out) / "report.html").write_text(report.render(result), encoding="utf-8")
            written.append(str(Path(args.out) / "report.html"))
        print(f"\nwrote {', '.join(written)}")
    return 0

