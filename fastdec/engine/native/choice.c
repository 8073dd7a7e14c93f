/* The cost-aware policy's choices in C: a Python extension module (_fd_choice), compiled on first use.

   - The batched choice on a fused pass (a CPU's pass over the rows' real positions), choose_fused: the same choice as
     the Python loop of BatchedChoice.choose_batch, reading the same positions in the same order. In Python each
     position read cost about 2.7 us (a heap of rows' next positions, a generator, a closure), 5-8 % of a batched decode
     at B = 2-8 on the fast backend. It reads the rows' counts and the policy's tables from the Python objects
     themselves, and each row's counts, drafter start and tokens left from its decode state: handed over through
     ctypes (each row's counts copied to C ints, the tables kept as C arrays), the hand-over took 30-50 us of a
     45-65 us choice.
   - The counting of a batched pass's rows (count_batch): each row's iteration into its sentence's counts and the
     input's, as AcceptanceCounts.observe_rows counts them (in Python 3-4 us a row, and 8-9 us a sentence's first).
   - The observation of a drafted batched pass on a fused pass (observe_fused): its judgement against its choice's
     promise and the fit of what its drafts added, as MeasuredCosts.observe_pass makes them (13-24 us a pass in Python
     between two passes of the C backend at B = 2 to 8).
   - The batch-1 counting and choice (count_sentence, best_length): every iteration of a batch-1 decode counts its
     draft into its sentence's counts and chooses the next draft length from them; in Python the two loops over draft
     positions took about a fifth of the policy's time there. They read and write the same Python lists the Python
     loops do (a sentence's counts stay lists: the batched choice and the tests read them).

   Every number is computed by the same operations in the same order as in Python (compiled without -ffast-math and
   with -ffp-contract=off), so each function returns what the Python loop it stands for returns, bit for bit, which
   the tests check on random inputs.

   A row's positions m = 1 .. limit are worth the product of its sentence's rates up to m; the batched choice takes
   positions best value first (ties: the lower row) and keeps the count of them that promises the most tokens per
   second. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>
#include <time.h>

/* the parts, in this order: each uses what the ones before it define */
#include "choice_rows.c"
#include "choice_positions.c"
#include "choice_priced.c"
#include "choice_observe.c"
#include "choice_sentence.c"

static PyMethodDef methods[] = {
    {"count_sentence", (PyCFunction)(void (*)(void))count_sentence, METH_FASTCALL, "count a sentence's iteration"},
    {"best_length", (PyCFunction)(void (*)(void))best_length, METH_FASTCALL, "a sentence's next draft length"},
    {"choose_fused", (PyCFunction)(void (*)(void))choose_fused, METH_FASTCALL, "a batch's draft lengths"},
    {"fit_add", (PyCFunction)(void (*)(void))fit_add, METH_FASTCALL, "count a drafted pass in a fit"},
    {"count_batch", (PyCFunction)(void (*)(void))count_batch, METH_FASTCALL, "count a batched pass's rows"},
    {"choose_priced", (PyCFunction)(void (*)(void))choose_priced, METH_FASTCALL, "a batch's terms and choice"},
    {"fold", (PyCFunction)(void (*)(void))fold, METH_FASTCALL, "add observations to the counts by position"},
    {"rates", (PyCFunction)(void (*)(void))rates, METH_FASTCALL, "the rates by position from the counts"},
    {"observe_fused", (PyCFunction)(void (*)(void))observe_fused, METH_FASTCALL, "observe a drafted fused pass"},
    {"observe_batch", (PyCFunction)(void (*)(void))observe_batch, METH_FASTCALL, "count a batched pass, observe it"},
    {"batch_step", (PyCFunction)(void (*)(void))batch_step, METH_FASTCALL, "a held step, or a batch's draft lengths"},
    {"take_held_step", (PyCFunction)(void (*)(void))take_held_step, METH_FASTCALL, "whether a held step is taken"},
    {"new_batch", (PyCFunction)(void (*)(void))new_batch, METH_FASTCALL, "a new batch starts"},
    {"start_batch", (PyCFunction)(void (*)(void))start_batch, METH_FASTCALL, "a batch starts"},
    {"start_sentence", (PyCFunction)(void (*)(void))start_sentence, METH_FASTCALL, "a sentence starts"},
    {"choose_one", (PyCFunction)(void (*)(void))choose_one, METH_FASTCALL, "a sentence's next draft length"},
    {"observe_iteration", (PyCFunction)(void (*)(void))observe_iteration, METH_FASTCALL, "count an iteration"},
    {"flush_iterations", (PyCFunction)(void (*)(void))flush_iterations, METH_FASTCALL, "count waiting iterations"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, .m_name = "_fd_choice", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__fd_choice(void) {
    if (!(s_last_drafted = PyUnicode_InternFromString("last_drafted")) ||
        !(s_last_accepted = PyUnicode_InternFromString("last_accepted")) ||
        !(s_extra = PyUnicode_InternFromString("extra")) ||
        !(s_policy_counts = PyUnicode_InternFromString("policy_counts")) ||
        !(s_drafter_started = PyUnicode_InternFromString("drafter_started")) ||
        !(s_policy_idle = PyUnicode_InternFromString("policy_idle")) ||
        !(s_policy_waits = PyUnicode_InternFromString("policy_waits")) ||
        !(s_src_list = PyUnicode_InternFromString("src_list")) || !(s_prefix = PyUnicode_InternFromString("prefix")))
        return NULL;
    struct {
        PyObject **name;
        const char *text;
    } names[] = {{&s_batch_greedy, "_batch_greedy"}, {&s_greedy, "_greedy"}, {&s_batch_fits, "_batch_fits"},
                 {&s_extra_fixed, "extra_fixed"}, {&s_extra_factor, "extra_factor"},
                 {&s_real_tokens_only, "_real_tokens_only"}, {&s_step_s, "step_s"}, {&s_batch, "batch"},
                 {&s_realized, "_realized"}, {&s_margin, "margin"}, {&s_extras, "_extras"}, {&s_weight, "weight"},
                 {&s_read_s, "_read_s"}, {&s_pad_s, "pad_s"}, {&s_bet_per_row, "_bet_per_row"},
                 {&s_probe_rows, "probe_rows"}, {&s_probe_len, "probe_len"}, {&s_q, "q"}, {&s_q_first, "q_first"},
                 {&s_drafter_s, "_drafter_s"}, {&s_start_s, "_start_s"}, {&s_max_draft, "max_draft"},
                 {&s_horizon, "horizon"}, {&s_line, "line"}, {&s_fed, "fed"},
                 {&s_rows_fused, "_rows_fused"}, {&s_last, "_last"}, {&s_pass_projected, "_pass_projected"},
                 {&s_promised, "_promised"}, {&s_judge_held, "_judge_held"},
                 {&s_iter_accepted, "_iter_accepted"}, {&s_iter_s, "_iter_s"},
                 {&s_judged, "_judged"}, {&s_pending, "_pending"}, {&s_fit_batch, "_fit_batch"},
                 {&s_cost, "cost"}, {&s_table, "_table"}, {&s_fit, "_fit"}, {&s_ends, "_ends"}, {&s_gots, "_gots"},
                 {&s_ends_first, "_ends_first"}, {&s_gots_first, "_gots_first"}, {&s_stale, "_stale"},
                 {&s_reach, "reach"}, {&s_version, "_version"}, {&s_fold_top, "_fold_top"},
                 {&s_deepest, "_deepest"}, {&s_refresh, "_refresh"}, {&s_skipped_s, "_skipped_s"},
                 {&s_observe_read, "_observe_read"}, {&s_batch_hold_len, "_batch_hold_len"},
                 {&s_batch_skips, "_batch_skips"}, {&s_standing, "_standing"}, {&s_cost_for, "_cost_for"},
                 {&s_choose_batch, "choose_batch"}, {&s_priced_in_c, "_priced_in_c"},
                 {&s_observe_handed_back, "_observe_handed_back"}, {&s_batch_hold, "batch_hold"},
                 {&s_batch_hold_rows, "_batch_hold_rows"}, {&s_end_batch_hold, "_end_batch_hold"},
                 {&s_waiting_iterations, "_waiting_iterations"}, {&s_flush_iterations, "_flush_iterations"},
                 {&s_skip, "_skip"}, {&s_first_stands, "_first_stands"}, {&s_least_after, "_least_after"},
                 {&s_no_length_pays, "_no_length_pays"}, {&s_choose, "choose"}, {&s_prepared_for, "_prepared_for"},
                 {&s_hold, "hold"}, {&s_new_sentence, "new_sentence"}, {&s_prepare, "prepare"},
                 {&s_costs, "_costs"}, {&s_load_costs, "load_costs"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!(*names[i].name = PyUnicode_InternFromString(names[i].text))) return NULL;
    return PyModule_Create(&module);
}

