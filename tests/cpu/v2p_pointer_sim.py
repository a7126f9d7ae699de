"""V2P pointer SFT on the GUI world in plain PyTorch (no verl, no FSDP): which tiny Qwen2.5-VL grounds instructions?

A diagnostic for the V2P miniature (recipes/v2p/demo.sh), like learning_sim.py for the learning test: the same
world (agentic_verl.v2p.synthetic), model (v2p.tiny + v2p.model), batches (v2p.batch) and click rule (v2p.inference)
as the demo, trained with AdamW in one process at ~0.4-1 s a step instead of verl's ~1.1 s. It prints the dev
screens' click-in-box accuracy every --eval-every steps; compare with the world's random-widget baseline (~0.26).

    .venv/bin/python tests/cpu/v2p_pointer_sim.py --steps 1000                      # the demo's model
    .venv/bin/python tests/cpu/v2p_pointer_sim.py --vision-hidden 128 --button-share 0
    .venv/bin/python tests/cpu/v2p_pointer_sim.py --overfit 16 --steps 300          # capacity: memorise 16 samples
    .venv/bin/python tests/cpu/v2p_pointer_sim.py --oracle --button-share 0         # query = the colour word's embedding
    .venv/bin/python tests/cpu/v2p_pointer_sim.py --probe --vision-hidden 128       # colour in the vision features?

--oracle replaces the pointer query (the LLM's hidden state at `<|pointer_pad|>`) by the input embedding of the
instruction's third word (the colour of "Click the red circle"): whether the vision side can be matched at all when
reading the instruction is free. --probe fits a logistic regression of a widget's colour on the untrained vision
tower's feature of the patch at the widget's centre (train screens -> held-out screens).

On a machine without the Qwen tokenizer package (a GPU machine with only torch), build the untrained model here with
`--save-init DIR` (plus the size flags), carry DIR, and run there with `--init DIR --device cuda --precompute`
(--precompute builds each sample's tensors once; --max-seconds stops training after that long).
Results: notes/lab_notebook.md, "V2P miniature".
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import tempfile
import time

import torch


def build(args):
    """The untrained V2P model: built from the tiny Qwen2.5-VL config, or loaded from --init (a --save-init folder,
    so that a machine without the Qwen tokenizer package can run the sim)."""
    from transformers import AutoProcessor

    from agentic_verl.v2p.model import V2PForConditionalGeneration, make_pointer_model

    if args.init:
        return V2PForConditionalGeneration.from_pretrained(args.init), AutoProcessor.from_pretrained(args.init)
    from agentic_verl.v2p.tiny import make_tiny_qwen2_5_vl

    folder = tempfile.mkdtemp(prefix="v2p_sim_")
    tiny = make_tiny_qwen2_5_vl(os.path.join(folder, "tiny"), seed=args.seed, hidden_size=args.hidden,
                                num_layers=args.layers, vocab=args.vocab, vision_hidden=args.vision_hidden)
    init = make_pointer_model(tiny, args.save_init or os.path.join(folder, "v2p"))
    model, processor = V2PForConditionalGeneration.from_pretrained(init), AutoProcessor.from_pretrained(init)
    shutil.rmtree(folder)
    return model, processor


def colour_probe(model, processor, screens) -> tuple[float, float]:
    """(train, held-out) accuracy of a linear probe of the widget colour on the vision features at its centre."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from agentic_verl.v2p.inference import pointer_inputs

    def features(split):
        rows, colours = [], []
        for screen in screens[split]:
            inputs = pointer_inputs(processor, screen.image.convert("RGB"), "x")
            with torch.no_grad():
                patches = model.model.get_image_features(inputs["pixel_values"],
                                                         inputs["image_grid_thw"]).pooler_output[0]
            _, grid_h, grid_w = inputs["image_grid_thw"][0].tolist()
            width, height = screen.image.size
            for element in screen.elements:
                x1, y1, x2, y2 = element["bbox"]
                col = int((x1 + x2) / 2 * grid_w * 14 / width // 28)
                row = int((y1 + y2) / 2 * grid_h * 14 / height // 28)
                rows.append(patches[row * (grid_w // 2) + col].numpy())
                colours.append(element["instruction"].split()[2])
        return np.array(rows), np.array(colours)

    x_train, y_train = features("train")
    x_test, y_test = features("test")
    probe = LogisticRegression(max_iter=3000).fit(x_train, y_train)
    return probe.score(x_train, y_train), probe.score(x_test, y_test)


def collate(processor, rows: list[dict]) -> dict:
    """build_batch's output for the samples whose one-sample batches are `rows` (right padding, as the processor)."""
    from agentic_verl.v2p.batch import IGNORE_INDEX

    pad_values = {"input_ids": processor.tokenizer.pad_token_id, "attention_mask": 0, "mm_token_type_ids": 0,
                  "labels": IGNORE_INDEX, "pointer_labels": 0.0}
    batch = {}
    for key in rows[0]:
        if key in ("pixel_values", "image_grid_thw"):
            batch[key] = torch.cat([row[key] for row in rows])
            continue
        width = max(row[key].shape[1] for row in rows)
        batch[key] = torch.cat([torch.nn.functional.pad(row[key], (0, width - row[key].shape[1]), value=pad_values[key])
                                for row in rows])
    return batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--vision-hidden", type=int, default=32)
    parser.add_argument("--vocab", type=int, default=8192)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--train-screens", type=int, default=400)
    parser.add_argument("--button-share", type=float, default=0.5, help="0: icons only, named by colour + shape")
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--overfit", type=int, default=0, help="train and evaluate on the first N training samples")
    parser.add_argument("--oracle", action="store_true", help="pointer query = the colour word's input embedding")
    parser.add_argument("--probe", action="store_true", help="only the linear colour probe of the vision features")
    parser.add_argument("--precompute", action="store_true",
                        help="build every sample's tensors once, on the device, instead of running the processor "
                             "at every step")
    parser.add_argument("--device", default="cpu", help="torch device for the model, e.g. cuda")
    parser.add_argument("--max-seconds", type=float, default=0, help="stop training after this long (0: no limit)")
    parser.add_argument("--init", help="load the untrained V2P model from this --save-init folder")
    parser.add_argument("--save-init", help="build the untrained V2P model into this folder and exit")
    args = parser.parse_args()
    if args.init and args.save_init:
        parser.error("--init loads a model that --save-init made: give one of them")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    from agentic_verl.v2p.batch import build_batch
    from agentic_verl.v2p.inference import predict_click
    from agentic_verl.v2p.synthetic import GuiWorld, WorldConfig

    world = GuiWorld(args.seed, WorldConfig(button_share=args.button_share))
    screens = world.split_screens(args.train_screens, 30, 30)
    model, processor = build(args)
    if args.save_init:
        print(f"saved the untrained model in {args.save_init}")
        return
    model.to(args.device)
    if args.probe:
        if args.button_share != 0:
            raise SystemExit("--probe reads colours from icon instructions: use --button-share 0")
        train_acc, test_acc = colour_probe(model.eval(), processor, screens)
        print(f"colour probe (vision hidden {args.vision_hidden}): train {train_acc:.3f}, held-out {test_acc:.3f}")
        return

    samples = [(s.image, e["instruction"], e["bbox"]) for s in screens["train"] for e in s.elements]
    held_out = [(s.image, e["instruction"], e["bbox"]) for s in screens["dev"] for e in s.elements]
    if args.overfit:
        samples = samples[: args.overfit]
        held_out = samples
    oracle_queries: list[torch.Tensor] = []
    if args.oracle:
        head_forward = model.pointer_head.forward
        model.pointer_head.forward = lambda patches, query: head_forward(patches, oracle_queries.pop(0))

    def set_oracle(instructions):
        if args.oracle:
            ids = [processor.tokenizer(" " + i.split()[2], add_special_tokens=False)["input_ids"][0]
                   for i in instructions]
            oracle_queries[:] = list(model.get_input_embeddings()(torch.tensor(ids, device=model.device)))

    def accuracy() -> float:
        model.eval()
        hits = 0
        with torch.no_grad():
            for image, instruction, (x1, y1, x2, y2) in held_out:
                set_oracle([instruction])
                x, y = predict_click(model, processor, image, instruction).point
                hits += x1 <= x <= x2 and y1 <= y <= y2
        model.train()
        return hits / len(held_out)

    model.set_stage("full")
    model.train()
    optimizer = torch.optim.AdamW(model.optimizer_param_groups(0.0), lr=args.lr)
    rng = random.Random(args.seed)
    print(f"{len(samples)} training samples, {len(held_out)} evaluated; "
          f"{sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters", flush=True)
    start, losses = time.monotonic(), []
    rows = []
    if args.precompute:
        rows = [{key: value.to(args.device) for key, value in build_batch(processor, [sample]).items()}
                for sample in samples]
        print(f"precomputed {len(rows)} samples in {time.monotonic() - start:.0f} s", flush=True)
    for step in range(1, args.steps + 1):
        chosen = rng.sample(range(len(samples)), min(args.batch_size, len(samples)))
        if args.precompute:
            batch = collate(processor, [rows[i] for i in chosen])
        else:
            batch = build_batch(processor, [samples[i] for i in chosen])
            batch = {key: value.to(args.device) for key, value in batch.items()}
        set_oracle([samples[i][1] for i in chosen])
        out = model(**batch)  # the full stage's loss, as recipes/v2p/sft_full.sh: LM + pointer
        optimizer.zero_grad()
        out.loss.backward()
        optimizer.step()
        losses.append(out.pointer_loss.item())
        out_of_time = args.max_seconds and time.monotonic() - start > args.max_seconds
        if step % args.eval_every == 0 or step == args.steps or out_of_time:
            recent = losses[-50:]
            print(f"step {step}: pointer loss {sum(recent) / len(recent):.3f}, click accuracy {accuracy():.3f} "
                  f"({time.monotonic() - start:.0f} s)", flush=True)
        if out_of_time:
            break


if __name__ == "__main__":
    main()
