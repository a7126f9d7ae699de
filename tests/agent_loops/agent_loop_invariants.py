"""Token/mask invariants every agent loop output must satisfy (shared by the loop tests)."""

from __future__ import annotations


def runs(mask: list[int]) -> list[tuple[int, int, int]]:
    """(start, end, value) runs of equal mask values."""
    out, start = [], 0
    for i in range(1, len(mask) + 1):
        if i == len(mask) or mask[i] != mask[start]:
            out.append((start, i, mask[start]))
            start = i
    return out


def check_token_invariants(out, server, tokenizer, observations: list[str] | None = None) -> None:
    """- ids, mask and logprobs line up; the mask is 0/1;
    - every generate call saw exactly prompt_ids + the response built so far (nothing re-tokenised);
    - each policy run (mask 1) is a prefix of what the server returned for that call, and the server's
      logprobs sit on it; observation positions carry logprob 0.0;
    - each observation run (mask 0) is the tokenisation of one of `observations` (when given);
    - prompt + response decode to the concatenation of the segments' texts (the conversation)."""
    ids, mask, logprobs = out.response_ids, out.response_mask, out.response_logprobs
    assert len(ids) == len(mask)
    assert set(mask) <= {0, 1}
    if logprobs is not None:
        assert len(logprobs) == len(ids)

    policy_runs = [(s, e) for s, e, v in runs(mask) if v == 1]
    produced = [(c, o) for c, o in zip(server.calls, server.outputs, strict=True) if o.token_ids]
    assert len(policy_runs) == len(produced), (policy_runs, len(produced))
    for (start, end), (call, output) in zip(policy_runs, produced, strict=True):
        assert call["prompt_ids"] == out.prompt_ids + ids[:start], "the server saw a different context"
        assert ids[start:end] == list(output.token_ids[: end - start]), "policy tokens differ from the server's"
        if logprobs is not None:
            assert output.log_probs, "logprobs in the output that the server never gave"
            assert logprobs[start:end] == list(output.log_probs[: end - start])

    for start, end, value in runs(mask):
        if value == 0:
            if logprobs is not None:
                assert all(lp == 0.0 for lp in logprobs[start:end])
            if observations is not None:
                encoded = [tokenizer.encode(o, add_special_tokens=False) for o in observations]
                assert ids[start:end] in encoded or any(
                    ids[start:end] == sum(encoded[i:j], []) for i in range(len(encoded))
                    for j in range(i + 1, len(encoded) + 1)
                ), f"unexpected observation {tokenizer.decode(ids[start:end])!r}"

    whole = tokenizer.decode(out.prompt_ids + ids, skip_special_tokens=False)
    pieces = tokenizer.decode(out.prompt_ids, skip_special_tokens=False) + "".join(
        tokenizer.decode(ids[s:e], skip_special_tokens=False) for s, e, _ in runs(mask))
    assert whole == pieces


def policy_text(out, tokenizer) -> str:
    return "".join(tokenizer.decode(out.response_ids[s:e], skip_special_tokens=False)
                   for s, e, v in runs(out.response_mask) if v == 1)


def observation_texts(out, tokenizer) -> list[str]:
    return [tokenizer.decode(out.response_ids[s:e], skip_special_tokens=False)
            for s, e, v in runs(out.response_mask) if v == 0]
