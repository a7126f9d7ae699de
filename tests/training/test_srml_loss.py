"""The SRML loss in verl's own terms: real verl collator, micro-batch splitter, `sft_loss` and metric reduction, with
data-parallel ranks simulated as verl's engine normalises them (global token counts, x dp_size per rank, sum over
micro-batches, mean over ranks)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch
from verl.utils import tensordict_utils as tu
from verl.utils.dataset.dataset_utils import SFTTensorCollator
from verl.utils.metric import AggregationType, Metric
from verl.workers.engine.utils import prepare_micro_batches
from verl.workers.utils.losses import sft_loss

from agentic_verl.agent_loops.prompts import bfcl_messages, funreason_target
from agentic_verl.registry import RegistryError
from agentic_verl.training.fc_sft_dataset import FunctionCallSFTDataset
from agentic_verl.training.sft_losses import (
    CALL_TOKENS_KEY,
    THINK_TOKENS_KEY,
    SRMLLoss,
    build_sft_loss,
    reduce_metrics,
    span_counts,
    srml_terms,
)

FUNCTIONS = [{"name": "add", "description": "Add two integers.",
              "parameters": {"type": "dict", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                             "required": ["a", "b"]}}]  # fmt: skip
# Reasoning and call lengths differ per sample, so per-micro-batch or per-rank averaging would not match.
SAMPLES = [
    ("Add 1 and 2.", "One call: add.", "[add(a=1, b=2)]"),
    (
        "What is 40 plus 2?",
        "The user wants 40 + 2, which the add function computes from two integers.",
        "[add(a=40, b=2)]",
    ),
    ("Sum 7 and 8, then sum 9 and 10.", "Two independent sums: two calls of add.", "[add(a=7, b=8), add(a=9, b=10)]"),
    ("Add 3 and 3.", "Easy.", "[add(a=3, b=3)]"),
    (
        "Add 100 and 23 please.",
        "The two numbers are 100 and 23; add takes a and b as integers, so I call it once.",
        "[add(a=100, b=23)]",
    ),
    ("Add 0 and 0.", "Zero plus zero.", "[add(a=0, b=0)]"),
    ("Add 5 and 6, 7 and 8, and 1 and 1.", "Three sums.", "[add(a=5, b=6), add(a=7, b=8), add(a=1, b=1)]"),
    ("Add 11 and 12.", "A single addition with add.", "[add(a=11, b=12)]"),
]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    from transformers import AutoTokenizer

    from agentic_verl.cpu.models import qwen_tokenizer_dir

    rows = [{"messages": [*bfcl_messages(q, FUNCTIONS), {"role": "assistant", "content": funreason_target(r, c)}]}
            for q, r, c in SAMPLES]  # fmt: skip
    path = tmp_path_factory.mktemp("srml") / "sft.parquet"
    pd.DataFrame(rows).to_parquet(path)
    tokenizer = AutoTokenizer.from_pretrained(str(qwen_tokenizer_dir()))
    return FunctionCallSFTDataset(str(path), tokenizer, {"max_length": 4096})


def _rank_batches(dataset, dp_size: int, micro: int) -> list:
    """Each rank's batch as verl's SFT trainer builds it, with the non-tensor data verl's engine adds."""
    collate = SFTTensorCollator("no_padding")
    per_rank = len(dataset) // dp_size
    meta = {"micro_batch_size_per_gpu": micro, "use_dynamic_bsz": False, "pad_mode": "no_padding"}
    batches = [tu.get_tensordict(collate([dataset[i] for i in range(r * per_rank, (r + 1) * per_rank)]), meta)
               for r in range(dp_size)]  # fmt: skip
    batch_num_tokens = sum(int(b["loss_mask"].values().sum()) for b in batches)  # the engine's all-reduce
    for batch in batches:
        tu.assign_non_tensor(batch, batch_num_tokens=batch_num_tokens, dp_size=dp_size)
    return batches


def _prepare_srml(loss: SRMLLoss, batches: list) -> tuple[int, int]:
    """SRMLLoss.prepare_batch on each rank, with the all-reduce over ranks done here (one process, no group)."""
    for batch in batches:
        loss.prepare_batch(batch)
    n_think = sum(b[THINK_TOKENS_KEY] for b in batches)
    n_call = sum(b[CALL_TOKENS_KEY] for b in batches)
    for batch in batches:
        tu.assign_non_tensor(batch, **{THINK_TOKENS_KEY: n_think, CALL_TOKENS_KEY: n_call})
    return n_think, n_call


def _step(loss_fn, batches: list, theta: dict) -> tuple[torch.Tensor, list]:
    """verl's reduction of one step: per rank, the loss summed over micro-batches (each backpropagated); over ranks,
    the mean (FSDP's gradient average, `_postprocess_output`'s all_reduce AVG). `theta[id]` parameterises each
    sample's per-token log-probs, standing in for the model (what the loss sees is identical)."""
    rank_losses, rank_metrics = [], []
    for batch in batches:
        micro_batches, _ = prepare_micro_batches(batch)
        total, metrics = 0.0, []
        for mb in micro_batches:
            ids = mb["input_ids"]
            log_probs = [-torch.nn.functional.softplus(theta[tuple(x.tolist())]) for x in ids.unbind()]
            model_output = {"log_probs": torch.nested.as_nested_tensor(log_probs, layout=torch.jagged)}
            loss, m = loss_fn(model_output=model_output, data=mb, dp_group=None)
            total = total + loss
            metrics.append(m)
        rank_losses.append(total)
        rank_metrics.append(metrics)
    return torch.stack(rank_losses).mean(), rank_metrics


def _thetas(dataset, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return {tuple(dataset[i]["input_ids"].tolist()): torch.randn(len(dataset[i]["input_ids"]), generator=gen,
                                                                 dtype=torch.float64, requires_grad=True)
            for i in range(len(dataset))}  # fmt: skip


@pytest.mark.parametrize("dp_size, micro", [(1, 8), (1, 2), (2, 2), (4, 1)])
def test_srml_at_the_token_ratio_is_verls_plain_sft_loss(dataset, dp_size, micro):
    plain_theta, srml_theta = _thetas(dataset), _thetas(dataset)
    plain, _ = _step(lambda **kw: sft_loss(config=None, **kw), _rank_batches(dataset, dp_size, micro), plain_theta)
    batches = _rank_batches(dataset, dp_size, micro)
    n_think, n_call = _prepare_srml(SRMLLoss(alpha=0.5), batches)
    assert n_think > 0 and n_call > 0 and n_think + n_call == batches[0]["batch_num_tokens"]
    srml, _ = _step(SRMLLoss(alpha=n_think / (n_think + n_call)), batches, srml_theta)
    plain.backward()
    srml.backward()
    torch.testing.assert_close(srml, plain, rtol=1e-12, atol=0)
    for key in plain_theta:
        torch.testing.assert_close(srml_theta[key].grad, plain_theta[key].grad, rtol=1e-10, atol=1e-15)


def test_another_alpha_is_not_plain_sft(dataset):
    batches = _rank_batches(dataset, 1, 2)
    n_think, n_call = _prepare_srml(SRMLLoss(), batches)
    theta = _thetas(dataset)
    plain, _ = _step(lambda **kw: sft_loss(config=None, **kw), _rank_batches(dataset, 1, 2), theta)
    srml, _ = _step(SRMLLoss(alpha=0.7), batches, theta)
    assert abs(n_think / (n_think + n_call) - 0.7) > 0.05  # the test data's ratio is not 0.7
    assert abs(srml.item() - plain.item()) > 1e-6


@pytest.mark.parametrize("dp_size, micro", [(1, 2), (2, 2), (4, 1)])
def test_logged_span_losses_are_the_steps_span_means(dataset, dp_size, micro):
    """What verl logs (after our reduction of its Metric lists) is the mean CE over all reasoning / call tokens."""
    batches = _rank_batches(dataset, dp_size, micro)
    loss_fn = SRMLLoss(alpha=0.7)
    _prepare_srml(loss_fn, batches)
    theta = _thetas(dataset)
    total, rank_metrics = _step(loss_fn, batches, theta)
    # as verl's postprocess_batch_func (one Metric per key per rank) and all-gather over ranks (a list of them)
    gathered = {}
    for metrics in rank_metrics:
        per_rank = {}
        for m in metrics:
            for key, value in m.items():
                per_rank.setdefault(key, value.init_list()).append(value)
        for key, value in per_rank.items():
            gathered.setdefault(key, []).append(value)
    logged = reduce_metrics(gathered)
    nll_think, nll_call = [], []
    for i in range(len(dataset)):
        item = dataset[i]
        nll = torch.nn.functional.softplus(theta[tuple(item["input_ids"].tolist())]).detach()
        target = torch.roll(item["loss_mask"], -1).bool()
        think = torch.roll(item["think_mask"], -1).bool()
        nll_think.append(nll[target & think])
        nll_call.append(nll[target & ~think])
    think_mean, call_mean = torch.cat(nll_think).mean().item(), torch.cat(nll_call).mean().item()
    assert logged["srml/loss_think"] == pytest.approx(think_mean, rel=1e-9)
    assert logged["srml/loss_call"] == pytest.approx(call_mean, rel=1e-9)
    assert logged["srml/alpha"] == pytest.approx(0.7)
    assert total.item() == pytest.approx(0.7 * think_mean + 0.3 * call_mean, rel=1e-9)
    assert logged["srml/think_tokens"] == sum(len(t) for t in nll_think)


def test_span_counts_and_terms_by_hand():
    # tokens:       p  p  r  r  c  c(eos)   (p prompt, r reasoning, c call); log-prob t predicts token t+1
    loss_mask = torch.tensor([0, 0, 1, 1, 1, 1])
    think_mask = torch.tensor([0, 0, 1, 1, 0, 0])
    assert [int(x) for x in span_counts(loss_mask, think_mask)] == [2, 2]
    log_prob = torch.log(torch.tensor([0.9, 0.5, 0.25, 0.5, 0.125, 1.0], dtype=torch.float64))
    think, call = srml_terms(log_prob, loss_mask, think_mask, n_think=2, n_call=2, dp_size=1)
    assert think.item() == pytest.approx((-torch.log(torch.tensor(0.5 * 0.25))).item() / 2)
    assert call.item() == pytest.approx((-torch.log(torch.tensor(0.5 * 0.125))).item() / 2)
    # dp_size scales each rank's share (verl averages ranks afterwards)
    think2, _ = srml_terms(log_prob, loss_mask, think_mask, n_think=2, n_call=2, dp_size=2)
    assert think2.item() == pytest.approx(2 * think.item())


def test_targets_without_reasoning_put_all_weight_on_the_call_span(tmp_path):
    """A step with no reasoning tokens (targets without `</think>`): L is the call mean, i.e. plain SFT, not
    (1 - alpha) x it."""
    from transformers import AutoTokenizer

    from agentic_verl.cpu.models import qwen_tokenizer_dir

    rows = [{"messages": [*bfcl_messages(q, FUNCTIONS), {"role": "assistant", "content": c}]} for q, _, c in SAMPLES]
    pd.DataFrame(rows).to_parquet(tmp_path / "plain.parquet")
    tokenizer = AutoTokenizer.from_pretrained(str(qwen_tokenizer_dir()))
    no_think = FunctionCallSFTDataset(str(tmp_path / "plain.parquet"), tokenizer, {"max_length": 4096})
    batches = _rank_batches(no_think, 1, 4)
    loss_fn = SRMLLoss(alpha=0.3)
    assert _prepare_srml(loss_fn, batches)[0] == 0
    theta = _thetas(no_think)
    plain, _ = _step(lambda **kw: sft_loss(config=None, **kw), _rank_batches(no_think, 1, 4), theta)
    loss, _ = _step(loss_fn, batches, theta)
    torch.testing.assert_close(loss, plain, rtol=1e-12, atol=0)


def test_learnable_alpha_starts_at_alpha_and_moves_toward_the_lower_span_loss(dataset):
    loss_fn = SRMLLoss(alpha=0.7, learnable=True, alpha_lr=0.1, alpha_min=0.05, alpha_max=0.95)
    assert loss_fn.alpha().item() == pytest.approx(0.7)
    batches = _rank_batches(dataset, 1, 4)
    _prepare_srml(loss_fn, batches)
    theta = _thetas(dataset)
    loss, metrics = _step(loss_fn, batches, theta)
    loss.backward()
    think = sum(m["srml/loss_think"].aggregate() for m in metrics[0])
    call = sum(m["srml/loss_call"].aggregate() for m in metrics[0])
    assert loss_fn.theta.grad is not None
    loss_fn.after_step()
    moved = loss_fn.alpha().item()
    assert (moved < 0.7) == (think > call) and moved != pytest.approx(0.7)
    assert loss_fn.theta.grad is None or float(loss_fn.theta.grad) == 0.0
    for _ in range(200):  # far more steps: alpha stays inside its bounds
        loss_fn.theta.grad = torch.tensor(1.0 if think > call else -1.0)
        loss_fn.after_step()
    assert 0.05 <= loss_fn.alpha().item() <= 0.95


def test_prepare_batch_needs_the_span_mask():
    batch = tu.get_tensordict({"input_ids": torch.nested.as_nested_tensor([torch.ones(3, dtype=torch.long)],
                                                                          layout=torch.jagged),
                               "loss_mask": torch.nested.as_nested_tensor([torch.ones(3, dtype=torch.long)],
                                                                          layout=torch.jagged)})  # fmt: skip
    with pytest.raises(KeyError, match="think_mask"):
        SRMLLoss().prepare_batch(batch)


@pytest.mark.parametrize("name, kwargs, error", [
    ("srml", {"alpha": 1.5}, ValueError),  # alpha outside [0, 1]
    ("srml", {"alpha": 0.99, "learnable": True}, ValueError),  # learnable start outside its bounds
    ("sft", {"alpha": 0.7}, TypeError),  # verl's loss has no parameters
    ("nope", {}, RegistryError),  # unknown names list the known ones
])  # fmt: skip
def test_bad_loss_configs_fail_loudly(name, kwargs, error):
    with pytest.raises(error):
        build_sft_loss(name, kwargs)


def test_unknown_loss_names_the_known_ones():
    with pytest.raises(RegistryError, match="sft, srml"):
        build_sft_loss("nope")


def test_reduce_metrics_follows_verls_dp_aggregation():
    # two ranks x two micro-batches: SUM -> summed over micro-batches, averaged over ranks; MEAN -> mean
    def metric(aggregation, values):
        m = Metric(aggregation)
        m.extend(values)
        return m

    ranks = [metric(AggregationType.SUM, [1.0, 2.0]), metric(AggregationType.SUM, [3.0, 6.0])]
    alpha = [metric(AggregationType.MEAN, [0.7, 0.7]), metric(AggregationType.MEAN, [0.7, 0.7])]
    out = reduce_metrics({"srml/loss_think": ranks, "srml/alpha": alpha, "loss": 1.5, "one_rank": ranks[0]})
    assert out == {"srml/loss_think": 6.0, "srml/alpha": pytest.approx(0.7), "loss": 1.5, "one_rank": 3.0}
    json.dumps(out)  # plain floats: verl's loggers write them as they are


def test_docstring_examples_run():
    import doctest

    import agentic_verl.training.sft_losses as module

    result = doctest.testmod(module)
    assert result.attempted >= 2 and result.failed == 0
