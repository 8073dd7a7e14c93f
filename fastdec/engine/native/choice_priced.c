/* The batched choice with its terms made in C (priced_choice, choose_priced), the batched loop's choice call
   and held step (batch_step, take_held_step), and a batch's start (new_batch).
   Part of choice.c (one translation unit: it includes this file after the parts above it). */

/* The terms a batched choice prices with (BatchedChoice.choose_batch, MeasuredCosts), from the policy's own
   measurements: made in Python before every choice they took 20-25 us of a 35 us choice at B = 2 on the C backend,
   about as much as the choice itself. Each is what the Python method named returns, bit for bit. */
static PyObject *s_batch_greedy, *s_greedy, *s_batch_fits, *s_extra_fixed, *s_extra_factor, *s_real_tokens_only,
    *s_step_s, *s_batch, *s_realized, *s_margin, *s_extras, *s_weight, *s_read_s, *s_pad_s, *s_bet_per_row,
    *s_probe_rows, *s_probe_len, *s_q, *s_q_first, *s_drafter_s, *s_start_s, *s_max_draft, *s_horizon, *s_line,
    *s_fed, *s_rows_fused, *s_last, *s_pass_projected, *s_promised, *s_judge_held, *s_iter_accepted, *s_iter_s,
    *s_judged, *s_pending,
    *s_fit_batch, *s_cost, *s_table, *s_fit, *s_ends, *s_gots, *s_ends_first, *s_gots_first, *s_stale, *s_reach,
    *s_version, *s_fold_top, *s_deepest, *s_refresh, *s_skipped_s, *s_observe_read, *s_batch_hold_len, *s_batch_skips, *s_standing, *s_cost_for,
    *s_choose_batch, *s_priced_in_c, *s_observe_handed_back, *s_batch_hold, *s_batch_hold_rows, *s_end_batch_hold,
    *s_waiting_iterations, *s_flush_iterations,
    *s_prepared_for, *s_prepare, *s_costs, *s_load_costs;

static int double_attr(PyObject *obj, PyObject *name, double *out) {
    PyObject *x = attr_of(obj, name);
    if (!x) return -1;
    *out = PyFloat_AsDouble(x);
    Py_DECREF(x);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* whether an attribute is true (Python's truth): 1 or 0, -1 an error */
static int truth_attr(PyObject *obj, PyObject *name) {
    PyObject *x = attr_of(obj, name);
    const int on = x ? PyObject_IsTrue(x) : -1;
    Py_XDECREF(x);
    return on;
}

/* a long attribute set from C */
static int set_long(PyObject *obj, PyObject *name, long value) {
    PyObject *x = PyLong_FromLong(value);
    const int rc = x ? set_attr(obj, name, x) : -1;
    Py_XDECREF(x);
    return rc;
}

/* MeasuredCosts._scale's bound ratio: how much dearer a real greedy pass of `rows` rows (`measured` seconds) is than
   the calibration's (c_batch rows at c_step seconds), 1 to 4 */
static double scale_of(double measured, long rows, long c_batch, double c_step) {
    const double share = (double)rows / (double)c_batch;
    double scale = measured / (c_step * (1.0 < share ? 1.0 : share));
    if (1.0 > scale) scale = 1.0;
    if (4.0 < scale) scale = 4.0;
    return scale;
}

/* dict.get(key) of a {rows: seconds} dict: 1 found (*out), 0 not, -1 an error */
static int get_double(PyObject *dict, long key, double *out) {
    PyObject *k = PyLong_FromLong(key);
    if (!k) return -1;
    PyObject *v = PyDict_GetItemWithError(dict, k);
    Py_DECREF(k);
    if (!v) return PyErr_Occurred() ? -1 : 0;
    *out = PyFloat_AsDouble(v);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 1;
}

/* the next (key, value) of a {rows: seconds} dict as C numbers: 1, or 0 at its end, -1 an error */
static int next_item(PyObject *dict, Py_ssize_t *pos, long *key, double *val) {
    PyObject *k, *v;
    if (!PyDict_Next(dict, pos, &k, &v)) return 0;
    *key = PyLong_AsLong(k);
    *val = PyFloat_AsDouble(v);
    return PyErr_Occurred() ? -1 : 1;
}

/* MeasuredCosts.greedy_pass_s(rows, cost): the measured greedy pass at rows, else between the nearest measured row
   counts (the calibration's batch, at its step, one of them), else in proportion to the nearest */
static int greedy_pass(PyObject *greedy, long rows, long c_batch, double c_step, double *out) {
    int got = get_double(greedy, rows, out);
    if (got) return got;
    if (rows == c_batch) { /* (not measured at rows: the calibration's) */
        *out = c_step;
        return 1;
    }
    long lo = 0, hi = 0, k;
    double v_lo = 0.0, v_hi = 0.0, v;
    int has_lo = 0, has_hi = 0, c_in = 0;
    Py_ssize_t pos = 0;
    while ((got = next_item(greedy, &pos, &k, &v)) == 1) {
        if (k == c_batch) c_in = 1;
        if (k < rows && (!has_lo || k > lo)) lo = k, v_lo = v, has_lo = 1;
        if (k > rows && (!has_hi || k < hi)) hi = k, v_hi = v, has_hi = 1;
    }
    if (got < 0) return -1;
    if (!c_in) {
        if (c_batch < rows && (!has_lo || c_batch > lo)) lo = c_batch, v_lo = c_step, has_lo = 1;
        if (c_batch > rows && (!has_hi || c_batch < hi)) hi = c_batch, v_hi = c_step, has_hi = 1;
    }
    if (has_lo && has_hi) {
        *out = v_lo + (v_hi - v_lo) * (double)(rows - lo) / (double)(hi - lo);
    } else {
        const long near = has_hi ? hi : lo;
        *out = (has_hi ? v_hi : v_lo) * (double)rows / (double)near;
    }
    return 1;
}

/* the first key of a {rows: seconds} dict nearest rows (only keys > above): 1 found, 0 none, -1 an error */
static int first_nearest(PyObject *dict, long rows, long above, long *near, double *val) {
    long k, best = -1;
    double v;
    int got;
    Py_ssize_t pos = 0;
    while ((got = next_item(dict, &pos, &k, &v)) == 1) {
        const long d = k > rows ? k - rows : rows - k;
        if (k > above && (best < 0 || d < best)) best = d, *near = k, *val = v;
    }
    return got < 0 ? -1 : best >= 0;
}

/* MeasuredCosts._batch_greedy_near(rows): this batch's greedy pass (1 found, 0 None, -1 an error) */
static int batch_greedy_near(PyObject *batch_greedy, PyObject *greedy, long rows, long c_batch, double c_step,
                             double *out) {
    long near = 0;
    double v = 0.0, at_rows, at_near;
    int got = get_double(batch_greedy, rows, out);
    if (got || !PyDict_GET_SIZE(batch_greedy)) return got;
    if ((got = first_nearest(batch_greedy, rows, LONG_MIN, &near, &v)) < 0) return -1;
    if (!(near / 2 <= rows && rows <= 2 * near)) return 0;
    if (greedy_pass(greedy, rows, c_batch, c_step, &at_rows) < 0 ||
        greedy_pass(greedy, near, c_batch, c_step, &at_near) < 0)
        return -1;
    *out = v * (at_rows != 0.0 && at_near != 0.0 ? at_rows / at_near : (double)rows / (double)near);
    return 1;
}

/* MeasuredCosts._run_greedy_near(rows): the run's greedy pass */
static int run_greedy_near(PyObject *greedy, long rows, double *out) {
    long near = 0;
    double v = 0.0;
    int got;
    if ((got = get_double(greedy, rows, out)) != 0 || rows <= 1) return got;
    if ((got = first_nearest(greedy, rows, 1, &near, &v)) <= 0) return got;
    if (!(near / 2 <= rows && rows <= 2 * near)) return 0;
    *out = v * (double)rows / (double)near;
    return 1;
}

/* _batch_greedy_near(rows) and, where it has none, _run_greedy_near(rows) */
static int greedy_near(PyObject *batch_greedy, PyObject *greedy, long rows, long c_batch, double c_step, double *out) {
    const int got = batch_greedy_near(batch_greedy, greedy, rows, c_batch, c_step, out);
    return got ? got : run_greedy_near(greedy, rows, out);
}

static long bit_length(long x) {
    long n = 0;
    for (; x > 0; x >>= 1) n++;
    return n;
}

/* a fit's line (fixed, factor) */
static int line_of(PyObject *fit, double *fixed, double *factor) {
    PyObject *line = attr_of(fit, s_line);
    if (!line) return -1;
    int rc = -1;
    if (!PyTuple_Check(line) || PyTuple_GET_SIZE(line) != 2) {
        PyErr_SetString(PyExc_TypeError, "a fit's line must be a (fixed, factor) tuple");
    } else {
        *fixed = PyFloat_AsDouble(PyTuple_GET_ITEM(line, 0));
        *factor = PyFloat_AsDouble(PyTuple_GET_ITEM(line, 1));
        rc = PyErr_Occurred() ? -1 : 0;
    }
    Py_DECREF(line);
    return rc;
}

/* the value under the key of dict nearest key (measured_costs._nearest: the smaller of two as near), borrowed */
static PyObject *nearest_value(PyObject *dict, long key, long *near) {
    PyObject *k, *v, *out = NULL;
    long best_d = -1, best_k = 0;
    Py_ssize_t pos = 0;
    while (PyDict_Next(dict, &pos, &k, &v)) {
        const long x = PyLong_AsLong(k);
        if (x == -1 && PyErr_Occurred()) return NULL;
        const long d = x > key ? x - key : key - x;
        if (best_d < 0 || d < best_d || (d == best_d && x < best_k)) best_d = d, best_k = x, out = v;
    }
    if (!out) PyErr_SetString(PyExc_ValueError, "no key to be nearest");
    if (near) *near = best_k;
    return out;
}

/* MeasuredCosts.batch_line(rows) for rows > 1 */
static int batch_line(PyObject *fits, long rows, double *fixed, double *factor) {
    const long key = bit_length(rows), keys[3] = {key, key + 1, key - 1};
    for (int i = 0; i < 3; i++) { /* (fits.get(key) or fits.get(key + 1) or fits.get(key - 1)) */
        PyObject *k = PyLong_FromLong(keys[i]);
        if (!k) return -1;
        PyObject *fit = PyDict_GetItemWithError(fits, k);
        Py_DECREF(k);
        if (fit) return line_of(fit, fixed, factor);
        if (PyErr_Occurred()) return -1;
    }
    *fixed = 0.0;
    *factor = 1.0;
    if (!PyDict_GET_SIZE(fits)) return 0;
    PyObject *fit = nearest_value(fits, key, NULL);
    double ignored;
    return fit ? line_of(fit, &ignored, factor) : -1;
}

/* time.perf_counter() (CPython's monotonic clock on Linux: CLOCK_MONOTONIC) */
static double perf_counter(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* what BatchedChoice.choose_batch does with a chosen draft (choose_fused's answer `got`, started at t0): the time per
   position read measured (_observe_read) where `read_at_least` positions or more were read, _skipped_s at 0, the
   promise kept. `own_read`: the policy's class measures it with BatchedChoice's own method, made here unless the
   policy holds one of its own (a test's pin); else the method is called (a Python call, about 1 us between two
   passes). 0, or -1 an error */
static int chosen(PyObject *policy, PyObject *got, long B, double t0, long read_at_least, int own_read) {
    const long read = PyLong_AsLong(PyTuple_GET_ITEM(got, 4));
    if (read == -1 && PyErr_Occurred()) return -1;
    PyObject *x = NULL, *promise = NULL, **dict = own_read ? _PyObject_GetDictPtr(policy) : NULL;
    int rc = -1;
    if (read >= read_at_least) {
        const double seconds = (perf_counter() - t0) / (double)read;
        if (own_read && dict && *dict && !PyDict_GetItemWithError(*dict, s_observe_read)) {
            double was; /* (BatchedChoice._observe_read: a running mean, the first reading taken whole) */
            if (PyErr_Occurred() || double_attr(policy, s_read_s, &was) < 0 ||
                !(x = PyFloat_FromDouble(was == 0.0 ? seconds : 0.7 * was + 0.3 * seconds)) ||
                set_attr(policy, s_read_s, x) < 0)
                goto done;
        } else {
            PyObject *none = NULL;
            if (!PyErr_Occurred() && (x = PyFloat_FromDouble(seconds)))
                none = PyObject_CallMethodOneArg(policy, s_observe_read, x);
            if (!none) goto done;
            Py_DECREF(none);
        }
        Py_CLEAR(x);
    }
    if (!(x = PyFloat_FromDouble(0.0)) || set_attr(policy, s_skipped_s, x) < 0) goto done;
    if (!(promise = Py_BuildValue("(lOdO)", B, PyTuple_GET_ITEM(got, 2), perf_counter() - t0,
                                  PyTuple_GET_ITEM(got, 3))) ||
        set_attr(policy, s_promised, promise) < 0)
        goto done;
    rc = 0;
done:
    Py_XDECREF(x);
    Py_XDECREF(promise);
    return rc;
}

/* choose_priced(policy, states, cost, B): BatchedChoice.choose_batch's priced choice on a fused pass, its terms
   made here: each row's limit (its max_draft, at most the horizon), the greedy pass it is priced against (this
   batch's, else the run's, of about B rows), the drafted pass's line and scale, the bar, the floor and a first bet's
   tokens, then choose_fused. Returns (positions taken, draft lengths, tokens per second promised, tokens expected,
   positions read, limits, (fixed part, factor, greedy step, bar, floor, first bet)); (-2,) where no greedy pass of
   about B rows was measured;
   (-1, length) where the fused tables (policy._extras[B]) are missing or shorter than the choice reads (the caller
   makes them and asks again).
   choose_priced(policy, states, cost, B, t0, read_at_least): the same, and where a draft is chosen what
   BatchedChoice.choose_batch then does is done here too -- a choice that read `read_at_least` positions or more
   measures its time per position read (_observe_read), the promise is kept for the pass's
   judgement (_promised: rows, tokens per second, the choice's seconds since t0, a time.perf_counter() reading, tokens
   expected), _skipped_s starts again -- and only the draft lengths are returned (a list): in Python, after the C call,
   it took 3-6 us of a choice between two passes at B = 2 on the C backend. priced_choice is both (`keep` 0: the
   tuple; 1: a chosen draft kept, its reading measured by the policy's method; 2: by BatchedChoice's own, chosen). */
static PyObject *priced_choice(PyObject *policy, PyObject *states, PyObject *cost, long B, int keep, double t0,
                               long read_at_least) {
    if (!PyList_Check(states) || PyList_GET_SIZE(states) != B) {
        PyErr_SetString(PyExc_ValueError, "states must be a list of B states");
        return NULL;
    }
    PyObject *result = NULL, *limits = NULL, *most_o = NULL, *rows_o = NULL, *got = NULL;
    PyObject *batch_greedy = NULL, *greedy = NULL, *fits = NULL, *realized = NULL, *extras = NULL, *q = NULL,
             *q_first = NULL, *drafter_s = NULL, *start_s = NULL;
    int *limit_c = PyMem_Calloc((size_t)(B > 0 ? B : 1), sizeof(int));
    if (!limit_c) return PyErr_NoMemory();
    long horizon, c_batch, probe_rows, probe_len;
    double c_step, measured, fixed, factor, step, margin, weight, read_s, pad_s, bet_per_row, marginal = 0.0;
    int real_only;
    if (int_attr(policy, s_horizon, &horizon) < 0 || int_attr(cost, s_batch, &c_batch) < 0 ||
        double_attr(cost, s_step_s, &c_step) < 0 || !(batch_greedy = attr_of(policy, s_batch_greedy)) ||
        !(greedy = attr_of(policy, s_greedy)) || !PyDict_Check(batch_greedy) || !PyDict_Check(greedy)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "greedy passes must be dicts");
        goto done;
    }
    /* BatchedChoice._limits: a row's max_draft, at most the horizon, and on a padded pass of two rows or more at
       most what the calibration's widest pass fed a row, less the row's own token */
    long row_limit = horizon;
    if ((real_only = truth_attr(policy, s_real_tokens_only)) < 0) goto done;
    if (B > 1 && !real_only) {
        PyObject *fed = attr_of(cost, s_fed);
        if (!fed) goto done;
        const Py_ssize_t n_fed = PyList_Check(fed) ? PyList_GET_SIZE(fed) : 0;
        const long last = n_fed ? PyLong_AsLong(PyList_GET_ITEM(fed, n_fed - 1)) : -1;
        Py_DECREF(fed);
        if (last < 1 || c_batch < 1) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a batch's cost must have measured a pass");
            goto done;
        }
        const long w = (last + c_batch - 1) / c_batch - 1;
        row_limit = w < 1 ? 1 : (w < row_limit ? w : row_limit);
    }
    if (!(limits = PyList_New(B))) goto done;
    for (long r = 0; r < B; r++) {
        long lim;
        if (int_attr(PyList_GET_ITEM(states, r), s_max_draft, &lim) < 0) goto done;
        limit_c[r] = (int)(lim < row_limit ? lim : row_limit);
        PyObject *x = PyLong_FromLong(limit_c[r]);
        if (!x) goto done;
        PyList_SET_ITEM(limits, r, x);
    }
    int found = greedy_near(batch_greedy, greedy, B, c_batch, c_step, &measured);
    if (found < 0) goto done;
    if (!found) {
        result = Py_BuildValue("(i)", -2);
        goto done;
    }
    /* the drafted pass's line at about B rows, its factor scaled by how much dearer a real greedy pass is than the
       calibration's (MeasuredCosts._scale; B > 1: batch_line's fits) */
    if (B > 1) {
        if (!(fits = attr_of(policy, s_batch_fits)) || !PyDict_Check(fits)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the batch fits must be a dict");
            goto done;
        }
        if (batch_line(fits, B, &fixed, &factor) < 0) goto done;
    } else if (double_attr(policy, s_extra_fixed, &fixed) < 0 || double_attr(policy, s_extra_factor, &factor) < 0) {
        goto done;
    }
    factor = factor * (B > 1 && real_only ? scale_of(measured, B, c_batch, c_step) : 1.0);
    if (greedy_pass(greedy, B, c_batch, c_step, &step) < 0) goto done;
    /* BatchedChoice._bar: margin times a greedy pass's tokens per second, over what drafted passes of about B rows
       realised of their promise */
    if (double_attr(policy, s_margin, &margin) < 0 || !(realized = attr_of(policy, s_realized)) ||
        !PyDict_Check(realized)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the realised shares must be a dict");
        goto done;
    }
    double share = 1.0;
    found = get_double(realized, bit_length(B), &share);
    if (found < 0) goto done;
    if (!found || share == 0.0) { /* (dict.get(key) or the nearest's) */
        share = 1.0;
        if (PyDict_GET_SIZE(realized)) {
            PyObject *v = nearest_value(realized, bit_length(B), NULL);
            if (!v || ((share = PyFloat_AsDouble(v)) == -1.0 && PyErr_Occurred())) goto done;
        }
    }
    const double bar = margin * (double)B / (step * (1.0 < share ? 1.0 : share));
    if (double_attr(policy, s_weight, &weight) < 0 || double_attr(policy, s_read_s, &read_s) < 0 ||
        double_attr(cost, s_pad_s, &pad_s) < 0 || double_attr(policy, s_bet_per_row, &bet_per_row) < 0 ||
        int_attr(policy, s_probe_rows, &probe_rows) < 0 || int_attr(policy, s_probe_len, &probe_len) < 0)
        goto done;
    const long bet = (long)(bet_per_row * (double)B);  /* BatchedChoice._first_bet */
    const long most = probe_rows * probe_len > bet ? probe_rows * probe_len : bet;
    /* the fused tables and the least slope above B rows (MeasuredCosts._min_marginal), kept by native_choice._tables
       under the int B with the cost they were made for (a key of ints and the cost's id, built and hashed here, and
       the least slope made from the cost's curve again took a fifth of this call between two passes) */
    if (!(extras = attr_of(policy, s_extras)) || !PyDict_Check(extras) ||
        !(rows_o = PyLong_FromLong(B))) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the policy's tables must be a dict");
        goto done;
    }
    PyObject *tables = PyDict_GetItemWithError(extras, rows_o);
    if (!tables && PyErr_Occurred()) goto done;
    if (!tables || !PyTuple_Check(tables) || PyTuple_GET_SIZE(tables) != 5 || PyTuple_GET_ITEM(tables, 0) != cost ||
        PyObject_Length(PyTuple_GET_ITEM(tables, 3)) != PyObject_Length(PyTuple_GET_ITEM(tables, 1))) {
        if (!PyErr_Occurred()) result = Py_BuildValue("(ii)", -1, 16);
        goto done;
    }
    if ((marginal = PyFloat_AsDouble(PyTuple_GET_ITEM(tables, 4))) == -1.0 && PyErr_Occurred()) goto done;
    if (!(q = attr_of(policy, s_q)) || !(q_first = attr_of(policy, s_q_first)) ||
        !(drafter_s = attr_of(policy, s_drafter_s)) || !(start_s = attr_of(policy, s_start_s)))
        goto done;
    const double par[9] = {weight, factor * marginal * bar, step, fixed, factor, read_s, pad_s, 0.25 * step, bar};
    if (!(got = choose_rows(B, limit_c, states, q, q_first, PyTuple_GET_ITEM(tables, 1), PyTuple_GET_ITEM(tables, 2),
                            PyTuple_GET_ITEM(tables, 3), drafter_s, start_s, par, most)))
        goto done;
    if (PyTuple_GET_SIZE(got) != 5) { /* (-1, the tables' length needed) */
        result = got;
        got = NULL;
        goto done;
    }
    if (keep && PyLong_AsLong(PyTuple_GET_ITEM(got, 0)) > 0) {
        if (chosen(policy, got, B, t0, read_at_least, keep == 2) < 0) goto done;
        result = Py_NewRef(PyTuple_GET_ITEM(got, 1));
        goto done;
    }
    result = Py_BuildValue("(OOOOOO(dddddO))", PyTuple_GET_ITEM(got, 0), PyTuple_GET_ITEM(got, 1),
                           PyTuple_GET_ITEM(got, 2), PyTuple_GET_ITEM(got, 3), PyTuple_GET_ITEM(got, 4), limits, fixed,
                           factor, step, bar, factor * marginal * bar, most_o = PyLong_FromLong(most));
done:
    PyMem_Free(limit_c);
    Py_XDECREF(limits);
    Py_XDECREF(most_o);
    Py_XDECREF(rows_o);
    Py_XDECREF(got);
    Py_XDECREF(batch_greedy);
    Py_XDECREF(greedy);
    Py_XDECREF(fits);
    Py_XDECREF(realized);
    Py_XDECREF(extras);
    Py_XDECREF(q);
    Py_XDECREF(q_first);
    Py_XDECREF(drafter_s);
    Py_XDECREF(start_s);
    return result;
}

static PyObject *choose_priced(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 && nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "choose_priced(policy, states, cost, B[, t0, read_at_least])");
        return NULL;
    }
    const long B = PyLong_AsLong(args[3]);
    double t0 = 0.0;
    long read_at_least = 0;
    if ((B == -1 && PyErr_Occurred()) ||
        (nargs == 6 && (((t0 = PyFloat_AsDouble(args[4])) == -1.0 && PyErr_Occurred()) ||
                        ((read_at_least = PyLong_AsLong(args[5])) == -1 && PyErr_Occurred()))))
        return NULL;
    return priced_choice(args[0], args[1], args[2], B, nargs == 6, t0, read_at_least);
}

static int fit_relax(PyObject *fit, const double keep); /* (choice_observe.c) */

/* new_batch(policy, fade): BatchedChoice.new_batch -- batch-1 iterations still waiting counted (_flush_iterations, a
   Python call), what drafted passes realised moved 1 - `fade` of the way back to their promise (_relax_judged: each
   row class's judged sums (tokens got, tokens expected, seconds spent, seconds promised) relaxed towards their
   promise, their realised share made again) and each row class's fit as far towards the calibration (_relax_fits),
   this batch's greedy passes and pending drafted passes emptied, a hold ended (_end_batch_hold), a
   "no draft" held for rows with counts of their own dropped. As Python methods at every batch's start, 6-9 us at
   B = 2 on the C backend. */
static PyObject *new_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "new_batch(policy, fade)");
        return NULL;
    }
    PyObject *policy = args[0], *x = NULL, *judged = NULL, *realized = NULL, *skips = NULL, *kept = NULL, *key, *val;
    PyObject *fits = NULL;
    const double f = PyFloat_AsDouble(args[1]);
    long hold_len, hold;
    int on;
    if (f == -1.0 && PyErr_Occurred()) return NULL;
    if (!(x = attr_of(policy, s_waiting_iterations)) || (on = PyObject_IsTrue(x)) < 0) goto fail;
    Py_CLEAR(x);
    if (on && !(x = PyObject_CallMethodNoArgs(policy, s_flush_iterations))) goto fail;
    Py_CLEAR(x);
    if (!(judged = attr_of(policy, s_judged)) || !(realized = attr_of(policy, s_realized))) goto fail;
    if (!PyDict_Check(judged) || !PyDict_Check(realized)) {
        PyErr_SetString(PyExc_TypeError, "the judged sums must be dicts");
        goto fail;
    }
    Py_ssize_t pos = 0;
    while (PyDict_Next(judged, &pos, &key, &val)) { /* (values replaced, keys kept: safe while iterating) */
        double v[4];
        if (!PyTuple_Check(val) || PyTuple_GET_SIZE(val) != 4) {
            PyErr_SetString(PyExc_TypeError, "judged sums must be 4-tuples");
            goto fail;
        }
        for (int i = 0; i < 4; i++)
            if ((v[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(val, i))) == -1.0 && PyErr_Occurred()) goto fail;
        const double got = v[1] - f * (v[1] - v[0]), seconds = v[3] + f * (v[2] - v[3]);
        Py_INCREF(key); /* (the dict's own reference may go with the value it replaces: kept until done) */
        int rc = (x = Py_BuildValue("(dddd)", got, v[1], seconds, v[3])) ? PyDict_SetItem(judged, key, x) : -1;
        Py_CLEAR(x);
        if (!rc) rc = (x = PyFloat_FromDouble((got / v[1]) * (v[3] / seconds))) ? PyDict_SetItem(realized, key, x) : -1;
        Py_CLEAR(x);
        Py_DECREF(key);
        if (rc < 0) goto fail;
    }
    if (!(fits = attr_of(policy, s_batch_fits))) goto fail;
    if (!PyDict_Check(fits)) {
        PyErr_SetString(PyExc_TypeError, "the batch's fits must be a dict");
        goto fail;
    }
    pos = 0;
    while (PyDict_Next(fits, &pos, &key, &val))
        if (fit_relax(val, f) < 0) goto fail;
    Py_CLEAR(fits);
    if (!(x = PyDict_New()) || set_attr(policy, s_batch_greedy, x) < 0) goto fail;
    Py_CLEAR(x);
    if (!(x = PyDict_New()) || set_attr(policy, s_pending, x) < 0) goto fail;
    Py_CLEAR(x);
    if (int_attr(policy, s_batch_hold_len, &hold_len) < 0 || int_attr(policy, s_batch_hold, &hold) < 0) goto fail;
    if ((hold_len || hold) && !(x = PyObject_CallMethodNoArgs(policy, s_end_batch_hold))) goto fail;
    Py_CLEAR(x);
    if (!(skips = attr_of(policy, s_batch_skips))) goto fail;
    if (!PyDict_Check(skips)) {
        PyErr_SetString(PyExc_TypeError, "the held choices must be a dict");
        goto fail;
    }
    if (PyDict_GET_SIZE(skips)) { /* (each held (made for (version, rows, own counts), uses, step, probe cost)) */
        if (!(kept = PyDict_New())) goto fail;
        pos = 0;
        while (PyDict_Next(skips, &pos, &key, &val)) {
            PyObject *made = PyTuple_Check(val) && PyTuple_GET_SIZE(val) ? PyTuple_GET_ITEM(val, 0) : NULL;
            if (!made || !PyTuple_Check(made) || PyTuple_GET_SIZE(made) < 3) {
                PyErr_SetString(PyExc_TypeError, "a held choice must be ((version, rows, own), uses, step, cost)");
                goto fail;
            }
            if ((on = PyObject_IsTrue(PyTuple_GET_ITEM(made, 2))) < 0 || (!on && PyDict_SetItem(kept, key, val) < 0))
                goto fail;
        }
        if (set_attr(policy, s_batch_skips, kept) < 0) goto fail;
    }
    Py_DECREF(judged);
    Py_DECREF(realized);
    Py_DECREF(skips);
    Py_XDECREF(kept);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(x);
    Py_XDECREF(judged);
    Py_XDECREF(realized);
    Py_XDECREF(skips);
    Py_XDECREF(kept);
    Py_XDECREF(fits);
    return NULL;
}

/* start_batch(policy, fade, verifier, B): CostAwarePolicy.prepare(verifier, B) before a batch, where the policy was
   prepared for this verifier: the batch's start (new_batch), and the costs read where none was measured at B rows or
   more (the method load_costs); else the method prepare itself. (Three Python methods, their frames read cold after
   a pass of the C backend, took 2-3 us a batch beside new_batch.) */
static PyObject *start_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "start_batch(policy, fade, verifier, B)");
        return NULL;
    }
    PyObject *policy = args[0], *verifier = args[2], *prepared = attr_of(policy, s_prepared_for), *costs = NULL,
             *result = NULL, *key, *val;
    const long B = PyLong_AsLong(args[3]);
    if (!prepared || (B == -1 && PyErr_Occurred())) goto done;
    if (prepared != verifier) {
        result = PyObject_CallMethodObjArgs(policy, s_prepare, verifier, args[3], NULL);
        goto done;
    }
    if (!(result = new_batch(self, args, 2))) goto done;
    Py_CLEAR(result);
    if (!(costs = attr_of(policy, s_costs))) goto done;
    if (!PyDict_Check(costs)) {
        PyErr_SetString(PyExc_TypeError, "the costs by batch size must be a dict");
        goto done;
    }
    long most = PyDict_GET_SIZE(costs) ? LONG_MIN : 0; /* (max(self._costs, default=0)) */
    Py_ssize_t pos = 0;
    while (PyDict_Next(costs, &pos, &key, &val)) {
        const long k = PyLong_AsLong(key);
        if (k == -1 && PyErr_Occurred()) goto done;
        if (k > most) most = k;
    }
    result = most < B ? PyObject_CallMethodObjArgs(policy, s_load_costs, verifier, args[3], NULL) : Py_NewRef(Py_None);
done:
    Py_XDECREF(prepared);
    Py_XDECREF(costs);
    return result;
}

/* take_held_step(policy, rows): BatchedChoice.take_held_step -- whether the batched loop's next pass, over `rows` rows,
   is a greedy one the held "no draft" covers (counted here), else False (a hold that ran out or lost half its rows ended
   by the method _end_batch_hold). As a Python method, called before every choice, it took 1.5-2 us between two
   passes at B = 2 on the C backend; held_step is the same for batch_step (1 held, 0 not, -1 an error). */
static int held_step(PyObject *policy, long rows) {
    long hold, hold_rows, hold_len;
    if (int_attr(policy, s_batch_hold, &hold) < 0) return -1;
    if (hold) {
        if (int_attr(policy, s_batch_hold_rows, &hold_rows) < 0) return -1;
        /* (Python's floor division, for a row count that is not negative) */
        const long half = hold_rows >= 0 ? hold_rows / 2 : -((-hold_rows + 1) / 2);
        if (rows > half) return set_long(policy, s_batch_hold, hold - 1) < 0 ? -1 : 1;
    }
    if (int_attr(policy, s_batch_hold_len, &hold_len) < 0) return -1;
    if (hold_len) {
        PyObject *none = PyObject_CallMethodNoArgs(policy, s_end_batch_hold);
        if (!none) return -1;
        Py_DECREF(none);
    }
    return 0;
}

static PyObject *take_held_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "take_held_step(policy, rows)");
        return NULL;
    }
    const long rows = PyLong_AsLong(args[1]);
    const int held = rows == -1 && PyErr_Occurred() ? -1 : held_step(args[0], rows);
    return held < 0 ? NULL : PyBool_FromLong(held);
}

/* whether batch_step's common case holds for B rows (1: *cost, a new reference, the batch's cost), as the method
   checks it: a fused pass, no hold on, no "no draft" held, no padded choice standing, counts seen, the cost found
   already. 0 not, -1 an error */
static int common_choice(PyObject *policy, long B, PyObject **cost) {
    PyObject *skips = NULL, *standing = NULL, *reach = NULL, *cost_for = NULL, *key = NULL;
    long held;
    double seen;
    int rc = -1, on;
    *cost = NULL;
    if ((on = truth_attr(policy, s_rows_fused)) < 0 || int_attr(policy, s_batch_hold_len, &held) < 0) return -1;
    if (!on || held) return 0;
    if (!(skips = attr_of(policy, s_batch_skips))) goto done;
    if ((on = PyObject_IsTrue(skips)) != 0) {
        rc = on < 0 ? -1 : 0;
        goto done;
    }
    if (!(standing = attr_of(policy, s_standing)) || !(reach = attr_of(policy, s_reach))) goto done;
    if (standing != Py_None) {
        rc = 0;
        goto done;
    }
    if (!PyList_Check(reach)) {
        PyErr_SetString(PyExc_TypeError, "the counts by position must be a list");
        goto done;
    }
    if (number_at(reach, 1, &seen) < 0) goto done;
    if (seen == 0.0) { /* (the run's first draft is a probe of one row) */
        rc = 0;
        goto done;
    }
    if (!(cost_for = attr_of(policy, s_cost_for)) || !(key = PyLong_FromLong(B))) goto done;
    if (!PyDict_Check(cost_for)) {
        PyErr_SetString(PyExc_TypeError, "the costs by rows must be a dict");
        goto done;
    }
    if ((*cost = PyDict_GetItemWithError(cost_for, key))) {
        Py_INCREF(*cost);
        rc = 1;
    } else {
        rc = PyErr_Occurred() ? -1 : 0;
    }
done:
    Py_XDECREF(skips);
    Py_XDECREF(standing);
    Py_XDECREF(reach);
    Py_XDECREF(cost_for);
    Py_XDECREF(key);
    return rc;
}

/* batch_step(policy, read_at_least, own_read, states, verifier): the batched loop's call before its pass (BatchedChoice
   .batch_calls): None where the held "no draft" covers the pass (take_held_step), else the rows' draft lengths as
   BatchedChoice.choose_batch chooses them, where its common case is decided
   here -- the batch's cost already found for B rows (_cost_for), no held "no draft" or hold on, no padded choice
   standing, counts seen, a fused pass -- as choose_priced(policy, states, cost, B, t0, read_at_least) after the
   method's resets (the promise, the iteration's time and tokens) and the cost kept as the last one; a choice that
   chose no draft, or could not choose yet, goes on in the method's _priced_in_c, and any other case in the method
   itself. (A Python method between two passes, its frame and first lines read cold, cost 4-6 us of a choice at B = 2
   on the C backend.) */
static PyObject *batch_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "batch_step(policy, read_at_least, own_read, states, verifier)");
        return NULL;
    }
    PyObject *policy = args[0], *states = args[3], *verifier = args[4], *x = NULL, *cost = NULL, *got = NULL;
    const long read_at_least = PyLong_AsLong(args[1]);
    const int own_read = PyObject_IsTrue(args[2]);
    if ((read_at_least == -1 && PyErr_Occurred()) || own_read < 0) return NULL;
    if (!PyList_Check(states)) {
        PyErr_SetString(PyExc_TypeError, "states must be a list");
        return NULL;
    }
    const int held = held_step(policy, (long)PyList_GET_SIZE(states));
    if (held) {
        if (held < 0) return NULL;
        Py_RETURN_NONE;
    }
    const int common = common_choice(policy, (long)PyList_GET_SIZE(states), &cost);
    const long B = common > 0 ? (long)PyList_GET_SIZE(states) : 0;
    if (common < 0) return NULL;
    if (!common) return PyObject_CallMethodObjArgs(policy, s_choose_batch, states, verifier, NULL);
    PyObject *result = NULL, *t0_o = NULL, *key = NULL;
    if (set_attr(policy, s_promised, Py_None) < 0 || !(x = PyFloat_FromDouble(0.0)) ||
        set_attr(policy, s_iter_s, x) < 0 || set_long(policy, s_iter_accepted, 0) < 0 ||
        set_attr(policy, s_last, cost) < 0)
        goto done;
    Py_CLEAR(x);
    const double t0 = perf_counter();
    if (!(got = priced_choice(policy, states, cost, B, 1 + own_read, t0, read_at_least))) goto done;
    if (PyList_Check(got)) {
        result = got;
        got = NULL;
        goto done;
    }
    if ((t0_o = PyFloat_FromDouble(t0)) && (key = PyLong_FromLong(bit_length(B))) && (x = PyLong_FromLong(B)))
        result = PyObject_CallMethodObjArgs(policy, s_priced_in_c, states, cost, x, got, t0_o, key, NULL);
done:
    Py_XDECREF(x);
    Py_XDECREF(cost);
    Py_XDECREF(got);
    Py_XDECREF(t0_o);
    Py_XDECREF(key);
    return result;
}
