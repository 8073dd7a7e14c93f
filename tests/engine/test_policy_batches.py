"""How the cost-aware policy bounds what a wrong estimate costs over a run: a row count's first drafts are small until
drafted passes of about as many rows were judged, every drafted batch pass is judged (a batch's last row too), a
"no draft" carries into the next batch where nothing it was made with changed, positions that cannot clear the bar
are not ranked, an empty proposal where a draft was asked counts as a rejected first position, and a bet that pays on
no batch-wide choice is made on a probe's rows, judged."""
from helpers.policy import (State, accepted_at, every_position_ranked, judged, not_judged, policy_with, ranking_spy,
                            seen_greedy, started_batch, unjudged_batch)

from conftest import copy_model
from fastdec.engine import accept_top1
from fastdec.engine.drafters import Drafter
from fastdec.engine.loop import draft_verify_accept


def test_a_row_count_s_first_draft_is_a_probe_s_worth_until_its_drafted_passes_were_judged():
    policy, rows = started_batch(per_token=2.5e-5)
    judged_full = sum(policy.choose_batch(rows, None))
    not_judged(policy)
    policy._batch_skips.clear()
    first = sum(policy.choose_batch(rows, None))
    assert 0 < first <= policy.probe_rows * policy.probe_len < judged_full
    judged(policy, 8)
    assert sum(policy.choose_batch(rows, None)) == judged_full


def test_a_batch_s_last_row_s_drafted_pass_is_judged():
    """A batch down to one row still drafts by the batched choice: what that pass gave is judged like any batch's."""
    policy, rows = started_batch(per_token=2.5e-5)
    seen_greedy(policy, 1, 2.5e-4)
    last = rows[:1]
    n = policy.choose_batch(last, None)
    assert sum(n) > 0 and 1 not in policy._realized
    rate = policy._promised[1]
    # (the choice's own seconds are measured, and count: here a known 1 % of the pass it chose, not what a loaded
    # machine made of that call)
    policy._promised = policy._promised[:2] + (0.01 * (1 + n[0]) / (rate * 0.6),) + policy._promised[3:]
    policy.observe(last[0], n[0], n[0])
    policy.observe_pass((1 + n[0]) / (rate * 0.6), n)
    # judged with a first pass that kept its promise: half way to 0.6 in seconds (the choice's own count too)
    assert 0.6 < policy._realized[1] < 0.75


def test_drafted_passes_are_judged_together_not_each_by_its_luck():
    """What drafted passes realise of their promise is their tokens per second together over what they promised
    together, so a pass weighs by what it promised: a small draft rejected at once after large ones that kept their
    promise leaves the bar where it was (judged each by its own ratio, two of them raised it by half at B = 2 on the
    fast backend, and the row count drafted no more), while passes that give half of theirs one after another raise
    it."""
    policy, rows = started_batch(per_token=2.5e-5)
    bar = policy._bar(8, 2e-3)
    for _ in range(4):
        policy._judge(8, got=48, seconds=2e-3, expected=48, promised_s=2e-3)  # 8 rows and 40 drafts, as promised
    for _ in range(2):  # 12 drafts expected to give 12 tokens, all rejected (by its own ratio: 0.4 each)
        policy._judge(8, got=8, seconds=1.2e-3, expected=20, promised_s=1.2e-3)
    assert policy._realized[4] > 0.85 and policy._bar(8, 2e-3) < 1.2 * bar  # (each by its own ratio: 0.69, 1.45x)
    assert sum(policy.choose_batch(rows, None)) > 0
    for _ in range(12):
        policy._judge(8, got=24, seconds=2e-3, expected=48, promised_s=2e-3)
    assert 0.5 < policy._realized[4] < 0.6 and policy._bar(8, 2e-3) > 1.6 * bar


def test_a_no_draft_made_without_rows_own_counts_carries_into_the_next_batch(monkeypatch):
    """A "no draft" made from the input's rates alone is not made again by a next batch of new rows, though the input's
    counts moved (the same close call, at 0.1-0.25 ms a choice on the fast backend); one made from the rows' own
    counts is."""
    policy = policy_with({8: (1e-4, 3e-4, 0.0, 2e-3)}, horizon=10, probe_share=1e-9)
    policy._rows_fused = True
    accepted_at(policy, 990)
    ranked = ranking_spy(policy, monkeypatch)
    every_position_ranked(policy, 8)
    policy.observe_greedy_pass(2e-3, 8)  # (the run has seen a greedy pass of 8 rows: later batches draft at once)
    assert policy.choose_batch([State() for _ in range(8)], None) == [0] * 8 and ranked == [8]
    policy.new_batch()
    assert policy.choose_batch([State() for _ in range(8)], None) == [0] * 8 and ranked == [8]
    counted = [State() for _ in range(8)]
    for st_ in counted:
        policy.observe(st_, drafted=5, accepted=0)
    policy.new_batch()
    # new rows: the "no draft" made for new rows holds though the input's counts moved
    assert policy.choose_batch([State() for _ in range(8)], None) == [0] * 8 and ranked == [8]
    policy.new_batch()
    # (each time twice: the choice, and the same as if the rows had no counts of their own -- it does not draft
    # either: the rows do not wait, _rows_wait)
    assert policy.choose_batch(counted, None) == [0] * 8 and ranked == [8, 8, 8]
    policy.new_batch()
    assert policy.choose_batch(counted, None) == [0] * 8 and ranked == [8, 8, 8, 8, 8]


def test_positions_that_cannot_clear_the_bar_are_not_ranked(monkeypatch):
    """A batch whose drafts realised a third of their promise needs three times greedy's rate: where the cheapest
    drafted token costs half a greedy row, no position (value at most 1) can reach it and none is ranked."""
    policy, rows = started_batch(per_token=2.5e-5)
    policy.use_cost(policy._costs[8].__class__(**{**policy._costs[8].__dict__,
                                                  "pass_s": [2e-3 + 1.25e-4 * (f - 8) for f in policy._costs[8].fed]}))
    ranked = ranking_spy(policy, monkeypatch)
    assert sum(policy.choose_batch(rows, None)) > 0 and ranked == [8]  # half a greedy row for 0.95 of a token: pays
    judged(policy, 8, 1 / 3)
    assert policy.choose_batch(rows, None) == [0] * 8 and ranked == [8]


class _DryDrafter(Drafter):
    """A drafter with nothing to propose (IAD past its source's end), counting its calls."""

    name = "dry"

    def __init__(self):
        self.calls = 0

    def start(self, state):
        pass

    def propose(self, state):
        self.calls += 1
        return []


def test_a_drafter_that_proposes_nothing_is_not_asked_every_step():
    """An empty proposal where a draft was asked counts as a rejected first position: the policy stops asking a drafter
    that has nothing (counted as nothing, the first-draft probe asked again at every step). A shorter proposal counts
    as drafted, all of it accepted here."""
    _, d, ver = copy_model()
    policy = policy_with({1: (1e-4, 1e-5, 1e-5, 2e-4)}, horizon=10)
    drafter = _DryDrafter()
    src = [5, 6, 7, 8, 9, 10, 11, d.eos()]
    out = [draft_verify_accept(ver, src, drafter, accept_top1, policy=policy, max_len_b=40) for _ in range(30)]
    steps = sum(r.stats.iterations for r in out)
    assert steps > 100 and drafter.calls < steps / 4
    assert policy.reach[1] >= 1 and policy.acc[1] == 0
    short = State()
    policy.observe(short, drafted=3, accepted=3, asked=8)
    policy._refresh()
    assert short.extra["policy_counts"][0][1:6] == [1, 1, 1, 0, 0] and short.extra["policy_counts"][1][1:4] == [1, 1, 1]


def test_a_fused_batch_s_choice_pays_for_the_positions_it_reads():
    """On a CPU's fused pass every position the choice reads costs its own time (measured on choices that read many):
    where reading a position costs more than its token brings, nothing is drafted; a padded pass leaves it out."""
    policy, rows = started_batch(per_token=2.5e-5)
    assert policy._read_s == 0.0 and sum(policy.choose_batch(rows, None)) > 0
    assert 0.0 < policy._read_s < 1e-3  # (measured on that choice: it read every row's ten positions)
    policy._read_s = 2e-3
    assert policy.choose_batch(rows, None) == [0] * 8
    policy._batch_skips.clear()
    policy._rows_fused = False
    assert sum(policy.choose_batch(rows, None)) > 0


def test_a_drafter_s_first_call_at_a_new_row_count_is_taken_at_most_at_twice_its_scaled_cost():
    """The first call at a new number of rows is often the only one there (a row count that does not draft is not
    measured again): one that stalls is taken at most at twice what the nearest measured count scales to, and later
    calls refine it as before; a first call that is cheaper than that is taken as it is."""
    policy = policy_with({})
    policy.observe_drafter(1e-5, 1)
    policy.observe_drafter(9.5e-4, 4)  # (a first call of IAD's drafter at 4 rows on the fast backend)
    assert policy.drafter_cost(4) == 8e-5
    policy.observe_drafter(9.5e-4, 4)
    assert abs(policy.drafter_cost(4) - (0.8 * 8e-5 + 0.2 * 9.5e-4)) < 1e-12
    policy.observe_drafter(3e-5, 8)
    assert policy.drafter_cost(8) == 3e-5
    policy.observe_start(1e-5, 1)
    policy.observe_start(1e-3, 2)
    assert policy.start_cost(2) == 4e-5


def test_what_drafts_realised_moves_back_to_their_promise_batch_by_batch():
    """A row count that stopped drafting is judged by no new pass: at each new batch what its drafts realised moves
    part of the way back to their promise, so a bar raised by one bad pass comes down and the row count drafts again
    (and is judged afresh); a row count whose drafts keep falling short is judged by them again."""
    policy, rows = started_batch(per_token=2.5e-5)
    bar = policy._bar(8, 2e-3)
    policy._judge(8, got=24, seconds=2e-3, expected=48, promised_s=2e-3)  # half of its promise
    raised = policy._bar(8, 2e-3)
    assert raised > 1.3 * bar
    policy.new_batch()
    assert bar < policy._bar(8, 2e-3) < raised
    for _ in range(20):
        policy.new_batch()
    assert policy._realized[4] > 0.95 and policy._bar(8, 2e-3) < 1.05 * bar


def test_a_bet_that_pays_on_no_batch_wide_choice_is_made_on_a_probe_s_rows():
    """A first bet's tokens, taken best value first, go to every row's first positions, each row asked paying its
    drafter: where that does not pay (32 rows, a drafter call of 50 us a row) the bet is made on a probe's rows (the
    batch's last), each as deep as the bet lets it (deeper than a probe's length), with a promise; kept, it lets the
    next choices bet more."""
    policy, rows = unjudged_batch(32, per_token=2e-5, drafter_row=5e-5, fused=True)
    n = policy.choose_batch(rows, None)
    assert n[:-policy.probe_rows] == [0] * (32 - policy.probe_rows) and all(n[-policy.probe_rows:])
    assert max(n) > policy.probe_len
    assert policy._promised is not None and policy._promised[0] == 32
    # (the promise counts the choice's own time, on the clock: set to none, so that a choice slowed by a loaded
    # machine does not make the pass below fall short of it)
    policy._promised = (*policy._promised[:2], 0.0, policy._promised[3])
    for st_, k in zip(rows, n):
        if k:
            policy.observe(st_, k, k)
    policy.observe_pass(0.9 * (32 + sum(n)) / policy._promised[1], n)  # (it gave more than it promised)
    assert policy._bet_per_row == 2 * sum(n) / 32 and policy._first_bet(32) == 2 * sum(n)
    # where a drafter call costs little, the batch-wide choice pays and is made as before
    policy._drafter_s = {1: 1e-6}
    assert all(policy.choose_batch(rows, None))


def test_a_bet_on_a_probe_s_rows_of_a_padded_pass_is_judged_and_does_not_stand():
    """On a padded pass (a GPU) a choice that took every position worth 1 % or more stands for a few iterations,
    unjudged; a bet on a probe's rows that took all of theirs is judged instead (what it is made for)."""
    policy, rows = unjudged_batch(32, per_token=1e-5, drafter_row=1e-4, fused=False)
    n = policy.choose_batch(rows, None)
    assert n == [0] * (32 - policy.probe_rows) + [10] * policy.probe_rows
    assert policy._standing is None and policy._promised is not None


def test_a_row_ranked_out_by_its_own_rejected_drafts_is_asked_again():
    """A row whose own drafts were rejected at their first token is ranked out of its batch's drafts; as passes go by
    without a draft for it, its first position's counts halve (after 1, 2, 4 .. passes) until the batch asks it again
    (IAD: the copy of its source in line again after an edit)."""
    policy, rows = started_batch(per_token=2.5e-5)
    policy._observe_read = lambda seconds: None  # (what a position's reading takes: 0, not this machine's clock)
    bad = rows[3]
    for _ in range(12):
        policy.observe(bad, drafted=5, accepted=0)
    first = bad.extra["policy_counts"][0][1]
    passes = 0
    while True:
        n = policy.choose_batch(rows, None)
        assert sum(n) > 0
        if n[3]:
            break
        for row, k in zip(rows, n):
            row.last_drafted, row.last_accepted = k, k
        policy.observe_rows(rows, n)
        passes += 1
        assert passes < 40
    assert passes >= 2 and bad.extra["policy_counts"][0][1] < first and bad.extra["policy_waits"] >= 1


def _two_rows_that_stopped(accepted_per_thousand: float):
    """A fused batch of two rows, both of whose own drafts were rejected at their first token 30 times, where the
    input's drafts are accepted at ``accepted_per_thousand`` and a drafted token costs 30 % of a greedy pass (no probe
    due; a position's reading costs nothing)."""
    policy = policy_with({2: (1e-4, 6e-4, 0.0, 2e-3)}, horizon=10)
    policy._rows_fused = True
    policy._observe_read = lambda seconds: None
    accepted_at(policy, accepted_per_thousand)
    policy._skipped_s = -1e9
    rows = [State(10) for _ in range(2)]
    for row in rows:
        row.extra["drafter_started"] = True
        for _ in range(30):
            policy.observe(row, drafted=5, accepted=0)
    return policy, rows


def test_a_batch_whose_every_row_stopped_by_its_own_drafts_waits_and_asks_again():
    """Where every row of a batch (two rows, or a batch's last row) was ranked out by its own rejected drafts while the
    input's drafts pay, the batch waits as a batch-1 sentence does: its rows' first-position counts halve and it takes
    1, 2, 4 .. greedy passes before it chooses again (no "no draft" kept to reuse), until its rows draft again; where
    the input's drafts do not pay either, the "no draft" is held and kept as before."""
    policy, rows = _two_rows_that_stopped(950)
    holds = []
    while True:
        n = policy.choose_batch(rows, None)
        if any(n):
            break
        holds.append(policy.batch_hold)
        assert not policy._batch_skips
        while policy.take_held_step(2):
            pass
        assert len(holds) < 10
    assert holds[:4] == [0, 1, 3, 7] and all(h == 15 for h in holds[4:])
    assert all(row.extra["policy_waits"] == len(holds) for row in rows)
    policy, rows = _two_rows_that_stopped(50)
    assert policy.choose_batch(rows, None) == [0, 0] and policy.batch_hold > 16 and policy._batch_skips
    assert all("policy_waits" not in row.extra for row in rows)
