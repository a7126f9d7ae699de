"""Test-only reward: the project's exact-match reward plus a deterministic function of the text, so that a random
tiny model (which never answers correctly) still gets rewards that differ within a GRPO group -- otherwise every
advantage is 0 and no weight would change."""

from agentic_verl.rewards.qa import qa_em


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    exact = qa_em(solution_str, ground_truth)
    exact_score = exact["score"] if isinstance(exact, dict) else float(exact)
    spread = (sum(map(ord, solution_str)) % 11) / 10.0
    return {"score": float(exact_score) + spread, "exact_match": float(exact_score)}
