"""Token routing of the MoE benchmark, without torch: which expert (rank) each rank's tokens go
to, and what every token row holds, so that any rank can recompute exactly what it must receive.

Experts' popularity follows Zipf(skew) over an order of the experts that changes every step and
is the same on every rank (a hot expert is hot for everyone); skew 0 is balanced. Each rank draws
its tokens' experts from that distribution with its own seeded generator, and sends them grouped
by expert (as a MoE layer's permute does before all_to_all_single).

Row values are small integers (< 256: exact in bfloat16 and every wider type): the row for the
i-th token rank `src` sends expert `dst` holds, in column c, (src*37 + dst*11 + i*7 + c) % 241;
the expert's "output" adds its rank, so combine returns at most 240 + ranks - 1.
"""
import random

MODULUS = 241


def expert_order(world, skew, step):
    """The experts from most to least popular this step (the same on every rank)."""
    order = list(range(world))
    random.Random(f"order/{world}/{skew}/{step}").shuffle(order)
    return order


def split_counts(src, world, tokens, skew, step):
    """Tokens rank `src` sends each expert this step (its all_to_all_single input_split_sizes)."""
    order = expert_order(world, skew, step)
    weight = [0.0] * world
    for popularity, expert in enumerate(order):
        weight[expert] = 1.0 / (popularity + 1) ** skew
    rng = random.Random(f"tokens/{src}/{world}/{skew}/{step}")
    counts = [0] * world
    for expert in rng.choices(range(world), weights=weight, k=tokens):
        counts[expert] += 1
    return counts


def row_value(src, dst, i, column):
    """What column `column` of the i-th token `src` sends `dst` holds."""
    return (src * 37 + dst * 11 + i * 7 + column) % MODULUS


def expected_received(me, world, tokens, skew, step):
    """(source, count) of every block rank `me` receives, in source order."""
    return [(src, split_counts(src, world, tokens, skew, step)[me]) for src in range(world)]
