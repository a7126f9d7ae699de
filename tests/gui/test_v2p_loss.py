"""V2P pointer loss against closed forms; the weighted total; the docstring examples of the GUI modules."""

from __future__ import annotations

import doctest
import importlib
import math

import pytest
import torch

from agentic_verl.v2p.loss import pointer_loss, total_loss


@pytest.mark.parametrize("logits, label, kl, valley", [
    # uniform over 4 patches, one-hot label: KL = log 4, mass outside the box = 3/4
    ([0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], math.log(4), 0.75),
    # the label equals the model's distribution and covers every patch: nothing to learn, no valley
    ([math.log(0.5), math.log(0.3), math.log(0.2)], [0.5, 0.3, 0.2], 0.0, 0.0),
    # the label covers two patches evenly, the model puts 0.5/0.25/0.25: KL = log(1) ... per patch, valley 0.25
    ([math.log(0.5), math.log(0.25), math.log(0.25)], [0.5, 0.5, 0.0], 0.5 * math.log(0.5 / 0.25), 0.25),
    # all the model's mass outside the box: the valley term is ~1
    ([-30.0, 0.0], [1.0, 0.0], 30.0, 1.0),
])
def test_pointer_loss_closed_forms(logits, label, kl, valley):
    out = pointer_loss([torch.tensor(logits)], [torch.tensor(label)])
    assert float(out["kl"]) == pytest.approx(kl, abs=1e-5)
    assert float(out["valley"]) == pytest.approx(valley, abs=1e-5)
    assert float(out["loss"]) == pytest.approx(kl + valley, abs=1e-5)


def test_pointer_loss_averages_samples_of_different_sizes_and_reads_padded_labels():
    logits = [torch.zeros(4), torch.zeros(2)]
    padded = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0]])  # row 1: 2 patches + padding
    out = pointer_loss(logits, padded, valley_weight=2.0)
    assert float(out["kl"]) == pytest.approx((math.log(4) + 0.0) / 2)
    assert float(out["valley"]) == pytest.approx((0.75 + 0.0) / 2)
    assert float(out["loss"]) == pytest.approx(float(out["kl"]) + 2 * float(out["valley"]))


def test_pointer_loss_gradient_moves_mass_into_the_box():
    logits = torch.zeros(5, requires_grad=True)
    pointer_loss([logits], [torch.tensor([0.0, 0.7, 0.3, 0.0, 0.0])])["loss"].backward()
    assert (logits.grad[1:3] < 0).all() and (logits.grad[[0, 3, 4]] > 0).all()  # descent raises the box's logits


def test_pointer_loss_rejects_mismatched_inputs():
    with pytest.raises(ValueError):
        pointer_loss([torch.zeros(3)], [torch.zeros(2)])  # label shorter than the patches
    with pytest.raises(ValueError):
        pointer_loss([torch.zeros(3)], [])


@pytest.mark.parametrize("lm, ptr, w_lm, w_ptr, expected", [
    (2.0, 3.0, 1.0, 1.0, 5.0),  # stage 2: CE + L_ptr
    (2.0, 3.0, 0.0, 1.0, 3.0),  # warm-up: LM loss off
    (None, 3.0, 1.0, 0.5, 1.5),  # no LM labels
    (2.0, None, 1.0, 1.0, 2.0),  # no pointer labels
])
def test_total_loss(lm, ptr, w_lm, w_ptr, expected):
    as_tensor = (lambda v: None if v is None else torch.tensor(v))  # noqa: E731
    assert float(total_loss(as_tensor(lm), as_tensor(ptr), w_lm, w_ptr)) == pytest.approx(expected)
    assert total_loss(None, None) is None


@pytest.mark.parametrize("module", [
    "agentic_verl.v2p.actions", "agentic_verl.v2p.labels", "agentic_verl.v2p.loss", "agentic_verl.v2p.inference",
    "agentic_verl.v2p.synthetic", "agentic_verl.data.gui_grounding",
])
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{module} has no examples"
    assert result.failed == 0
