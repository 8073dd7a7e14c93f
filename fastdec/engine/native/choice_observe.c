/* What decoding measures, observed in C: a drafted pass's cost fitted (fit_add), a batched pass judged against its
   promise and fitted (observe_fused), the drafter's start and call, a pass's rows counted and the pass observed in one
   call (count_batch, observe_batch).
   Part of choice.c (one translation unit: it includes this file after the parts above it). */

/* _ExtraFit.solve on sums (weight, x, y, x*x, x*y): (fixed seconds >= 0, factor in [0.25, 8]) */
static void fit_solve(const double v[5], double *fixed_out, double *factor_out) {
    const double n = v[0], sx = v[1], sy = v[2], sxx = v[3], sxy = v[4];
    double fixed = 0.0, factor = 1.0;
    if (!(n <= 0 || sx <= 0)) {
        const double mx = sx / n, my = sy / n, var = sxx / n - mx * mx;
        factor = (n >= 3 && var > pow_(0.25 * mx, 2.0)) ? (sxy / n - mx * my) / var : sy / sx;
        if (0.25 > factor) factor = 0.25;
        if (8.0 < factor) factor = 8.0;
        fixed = my - factor * mx;
        if (0.0 > fixed) fixed = 0.0;
    }
    *fixed_out = fixed;
    *factor_out = factor;
}

/* a fit's sums set to `s` and its line solved from them: the new line (a new reference), or NULL */
static PyObject *fit_store(PyObject *fit, const double s[5]) {
    double fixed, factor;
    fit_solve(s, &fixed, &factor);
    PyObject *sums = Py_BuildValue("(ddddd)", s[0], s[1], s[2], s[3], s[4]);
    PyObject *line = sums ? Py_BuildValue("(dd)", fixed, factor) : NULL;
    if (line && (PyObject_SetAttrString(fit, "sums", sums) < 0 || PyObject_SetAttrString(fit, "line", line) < 0))
        Py_CLEAR(line);
    Py_XDECREF(sums);
    return line;
}

/* _ExtraFit.relax(keep): the sums moved 1 - keep of the way to the calibration's line, with their own weight and mean
   prediction (passes at 0.5, 1 and 1.5 times it that cost what it says). 0, or -1 */
static int fit_relax(PyObject *fit, const double keep) {
    PyObject *sums_o = PyObject_GetAttrString(fit, "sums");
    double *v = sums_o ? doubles_of(sums_o, 5, NULL) : NULL;
    Py_XDECREF(sums_o);
    if (!v) return -1;
    int rc = PyErr_Occurred() ? -1 : 0;
    const double n = v[0], sx = v[1];
    if (!rc && !(n <= 0.0)) {
        const double mx = sx / n, w = 1.0 - keep, pxx = n * 3.5 / 3.0 * mx * mx;
        const double s[5] = {n, sx, keep * v[2] + w * sx, keep * v[3] + w * pxx, keep * v[4] + w * pxx};
        PyObject *line = fit_store(fit, s);
        rc = line ? 0 : -1;
        Py_XDECREF(line);
    }
    PyMem_Free(v);
    return rc;
}

/* fit_add(fit, predicted, seen): measured_costs._ExtraFit.add on a fit's slots (decay, sums, line, held): the batch-1
   loop counts a drafted pass with it (its arithmetic took 2-3 us a pass in Python). Returns the new line (the line as
   it was where the pass is set aside: more than three times dearer than the line says, the pass before not). */
static PyObject *fit_line_add(PyObject *fit, const double x, double seen) {
    PyObject *decay_o = NULL, *sums_o = NULL, *line_o = NULL, *held_o = NULL, *line = NULL;
    double d, v[5], l[2];
    if (!(decay_o = PyObject_GetAttrString(fit, "decay")) || !(sums_o = PyObject_GetAttrString(fit, "sums")) ||
        !(line_o = PyObject_GetAttrString(fit, "line")) || !(held_o = PyObject_GetAttrString(fit, "held")))
        goto done;
    d = PyFloat_AsDouble(decay_o);
    double *sums_v = doubles_of(sums_o, 5, NULL), *line_v = sums_v ? doubles_of(line_o, 2, NULL) : NULL;
    if (line_v) {
        memcpy(v, sums_v, sizeof v);
        memcpy(l, line_v, sizeof l);
    }
    PyMem_Free(sums_v);
    PyMem_Free(line_v);
    const int held = line_v ? PyObject_IsTrue(held_o) : -1;
    if (held < 0 || PyErr_Occurred()) goto done;
    const double expect = l[0] + l[1] * x, low = expect / 3.0, high = 3.0 * expect;
    if (seen > high && !held) { /* set aside: a stall of the machine, unless the next pass is that dear too */
        if (PyObject_SetAttrString(fit, "held", Py_True) == 0) line = Py_NewRef(line_o);
        goto done;
    }
    const int dear = seen > high; /* (a pass as dear as the one set aside before it counts, and held stays on) */
    if (held != dear && PyObject_SetAttrString(fit, "held", dear ? Py_True : Py_False) < 0) goto done;
    double n = v[0], sx = v[1], sy = v[2], sxx = v[3], sxy = v[4];
    if (n == 0.0) { /* the calibration as a prior: three passes at 0.5, 1 and 2 times this prediction */
        n = 3.0;
        sx = 3.5 * x;
        sxx = 5.25 * x * x;
        sy = sx;
        sxy = sxx;
    }
    if (low > seen) seen = low; /* min(max(seen, low), high), as Python's min and max pick */
    if (high < seen) seen = high;
    const double s[5] = {d * n + 1.0, d * sx + x, d * sy + seen, d * sxx + x * x, d * sxy + x * seen};
    line = fit_store(fit, s);
done:
    Py_XDECREF(decay_o);
    Py_XDECREF(sums_o);
    Py_XDECREF(line_o);
    Py_XDECREF(held_o);
    return line;
}

static PyObject *fit_add(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "fit_add(fit, predicted, seen)");
        return NULL;
    }
    const double x = PyFloat_AsDouble(args[1]), seen = PyFloat_AsDouble(args[2]);
    if (PyErr_Occurred()) return NULL;
    return fit_line_add(args[0], x, seen);
}

/* BatchedChoice._judge_batch_pass: a drafted pass of `rows` rows that took `seconds` with `sum` draft tokens against
   what its choice promised, where a choice of as many rows made one (its judged sums fade by `fade` a pass,
   _JUDGED_FADE; a pass that gave `kept` of its promise, _BET_KEPT, lets later bets grow); then the next iteration's
   clock and accepted tokens start from 0 and the promise is spent. 0, or -1 an error. */
static int judge_pass(PyObject *policy, long rows, double seconds, long sum, double fade, double kept) {
    PyObject *promised = NULL, *judged = NULL, *realized = NULL, *key = NULL, *item_o = NULL;
    int rc = -1;
    if (!(promised = attr_of(policy, s_promised))) goto done;
    if (promised != Py_None) {
        if (!PyTuple_Check(promised) || PyTuple_GET_SIZE(promised) != 4) {
            PyErr_SetString(PyExc_TypeError, "a promise must be a (rows, rate, seconds, tokens) tuple");
            goto done;
        }
        const long p_rows = PyLong_AsLong(PyTuple_GET_ITEM(promised, 0));
        if (p_rows == -1 && PyErr_Occurred()) goto done;
        if (p_rows == rows) {
            long accepted;
            double iter_s, p[3], sums[4], bet;
            if (int_attr(policy, s_iter_accepted, &accepted) < 0 || double_attr(policy, s_iter_s, &iter_s) < 0)
                goto done;
            for (int i = 0; i < 3; i++)
                if ((p[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(promised, i + 1))) == -1.0 && PyErr_Occurred()) goto done;
            const long got = rows + accepted;
            const double spent = seconds + iter_s + p[1], ratio = (double)got / spent / p[0];
            const double expected = p[2], promised_s = p[2] / p[0];
            /* a stall of the machine (slower than _STALLED = 3 times the promise): set aside unless the pass judged
               before it was that slow too */
            const int slow = spent > 3.0 * promised_s, held = truth_attr(policy, s_judge_held);
            if (held < 0) goto done;
            if (held != slow && set_attr(policy, s_judge_held, slow ? Py_True : Py_False) < 0) goto done;
            if (slow && !held) goto spent_promise;
            /* BatchedChoice._judge: sums that fade by `fade` a pass, from one pass that kept its promise */
            if (!(judged = attr_of(policy, s_judged)) || !(realized = attr_of(policy, s_realized)) ||
                !PyDict_Check(judged) || !PyDict_Check(realized)) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the judged sums must be dicts");
                goto done;
            }
            if (!(key = PyLong_FromLong(bit_length(rows)))) goto done;
            PyObject *had = PyDict_GetItemWithError(judged, key);
            if (!had && PyErr_Occurred()) goto done;
            if (had) {
                if (!PyTuple_Check(had) || PyTuple_GET_SIZE(had) != 4) {
                    PyErr_SetString(PyExc_TypeError, "judged sums must be 4-tuples");
                    goto done;
                }
                for (int i = 0; i < 4; i++)
                    if ((sums[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(had, i))) == -1.0 && PyErr_Occurred()) goto done;
            } else {
                sums[0] = sums[1] = expected;
                sums[2] = sums[3] = promised_s;
            }
            const double n0 = fade * sums[0] + (double)got, n1 = fade * sums[1] + expected,
                         n2 = fade * sums[2] + spent, n3 = fade * sums[3] + promised_s;
            if (!(item_o = Py_BuildValue("(dddd)", n0, n1, n2, n3)) || PyDict_SetItem(judged, key, item_o) < 0)
                goto done;
            Py_CLEAR(item_o);
            if (!(item_o = PyFloat_FromDouble((n0 / n1) * (n3 / n2))) || PyDict_SetItem(realized, key, item_o) < 0)
                goto done;
            Py_CLEAR(item_o);
            if (ratio >= kept) {
                const double more = (double)(2 * sum) / (double)rows;
                if (double_attr(policy, s_bet_per_row, &bet) < 0) goto done;
                if (more > bet) {
                    if (!(item_o = PyFloat_FromDouble(more)) || set_attr(policy, s_bet_per_row, item_o) < 0)
                        goto done;
                    Py_CLEAR(item_o);
                }
            }
        }
    }
spent_promise:
    if (!(item_o = PyFloat_FromDouble(0.0)) || set_attr(policy, s_iter_s, item_o) < 0) goto done;
    Py_CLEAR(item_o);
    if (!(item_o = PyLong_FromLong(0)) || set_attr(policy, s_iter_accepted, item_o) < 0 ||
        set_attr(policy, s_promised, Py_None) < 0)
        goto done;
    rc = 0;
done:
    Py_XDECREF(promised);
    Py_XDECREF(judged);
    Py_XDECREF(realized);
    Py_XDECREF(key);
    Py_XDECREF(item_o);
    return rc;
}

/* MeasuredCosts.observe_pass for a drafted pass of two rows or more on a fused pass (a CPU's), its common way: the
   pass judged against what its choice promised (judge_pass), and what its drafts added beyond the calibration's
   prediction, against this batch's greedy pass of its rows, handed to the batch's fit (_fit_batch, a Python call: one
   pass in a few) or kept for the batch's first greedy pass (_pending). `sum` draft tokens, the widest `most`, `pp` the
   rows the pass projected as counted (-1: not counted). 1 observed, 0 nothing changed where the Python method observes
   the pass (a padded pass, the tables of its rows not made for the policy's cost or too short), -1 an error. */
static int observe_fused_pass(PyObject *policy, double seconds, long rows, long sum, long most, long pp, double fade,
                              double kept) {
    PyObject *cost = NULL, *fed_list = NULL, *extras = NULL, *key = NULL, *batch_greedy = NULL, *greedy = NULL,
             *item_o = NULL;
    Doubles fed = {0}, rows_tab = {0};
    long c_batch = 0, proj = sum;
    double c_step = 0.0, pad_s = 0.0;
    const long t = sum, fed_n = rows + sum;
    int judged_only = 0, rc = -1;
    const int fused_on = truth_attr(policy, s_rows_fused);
    if (fused_on <= 0) return fused_on;
    /* what is read before anything changes: the cost, the tables */
    if (!(cost = attr_of(policy, s_last))) goto done;
    if (pp >= 0 && pp < proj) proj = pp;
    judged_only = cost == Py_None;
    if (!judged_only) {
        double last;
        if (int_attr(cost, s_batch, &c_batch) < 0 || double_attr(cost, s_step_s, &c_step) < 0 ||
            double_attr(cost, s_pad_s, &pad_s) < 0 || !(fed_list = attr_of(cost, s_fed)))
            goto done;
        if (!PyList_Check(fed_list) || !PyList_GET_SIZE(fed_list)) {
            PyErr_SetString(PyExc_TypeError, "a cost's fed tokens must be a non-empty list");
            goto done;
        }
        if (number_at(fed_list, PyList_GET_SIZE(fed_list) - 1, &last) < 0) goto done;
        /* (past the measured passes the prediction is a straight line out: not fitted) */
        judged_only = (double)(fed_n + (c_batch - rows > 0 ? c_batch - rows : 0)) > 1.5 * last;
    }
    if (!judged_only) {
        if (!(extras = attr_of(policy, s_extras)) || !(key = PyLong_FromLong(rows))) goto done;
        PyObject *entry = PyDict_Check(extras) ? PyDict_GetItemWithError(extras, key) : NULL;
        if (!entry && PyErr_Occurred()) goto done;
        if (!entry || !PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 5 || PyTuple_GET_ITEM(entry, 0) != cost) {
            rc = 0;
            goto done;
        }
        if (doubles_open(PyTuple_GET_ITEM(entry, 1), &fed) < 0 ||
            doubles_open(PyTuple_GET_ITEM(entry, 2), &rows_tab) < 0)
            goto done;
        if (fed.n <= t || rows_tab.n <= t) { /* (the Python method extends them) */
            rc = 0;
            goto done;
        }
    }
    if (set_attr(policy, s_pass_projected, Py_None) < 0 || judge_pass(policy, rows, seconds, sum, fade, kept) < 0)
        goto done;
    if (judged_only) {
        rc = 1;
        goto done;
    }
    /* what the drafts added: this pass less the batch's greedy pass of its rows (a pass waits for one) */
    double base = 0.0, measured = 0.0, scale = 1.0;
    if (!(batch_greedy = attr_of(policy, s_batch_greedy)) || !(greedy = attr_of(policy, s_greedy)) ||
        !PyDict_Check(batch_greedy) || !PyDict_Check(greedy)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "greedy passes must be dicts");
        goto done;
    }
    const int has_base = batch_greedy_near(batch_greedy, greedy, rows, c_batch, c_step, &base);
    if (has_base < 0) goto done;
    double extra_s = fed.p[t] + rows_tab.p[proj];
    if (pad_s != 0.0) extra_s += pad_s * (double)(rows * (1 + most) - fed_n);
    /* MeasuredCosts._scale: how much dearer a real greedy pass of these rows is than the calibration's (1 to 4) */
    const int real_only = truth_attr(policy, s_real_tokens_only);
    if (real_only < 0) goto done;
    if (real_only) {
        int has = has_base;
        measured = base;
        if (!has && (has = run_greedy_near(greedy, rows, &measured)) < 0) goto done;
        if (has) scale = scale_of(measured, rows, c_batch, c_step);
    }
    const double predicted = extra_s * scale;
    if (predicted <= 0) {
        rc = 1;
        goto done;
    }
    Py_CLEAR(key);
    if (!(key = PyLong_FromLong(rows))) goto done;
    if (!has_base) { /* (kept for the batch's first greedy pass of about as many rows: observe_greedy_pass) */
        PyObject *pending = attr_of(policy, s_pending), *fresh = PyList_New(0), *waiting;
        int added = -1;
        if (pending && fresh && PyDict_Check(pending) && (waiting = PyDict_SetDefault(pending, key, fresh)) &&
            (item_o = Py_BuildValue("(dd)", predicted, seconds)))
            added = PyList_Append(waiting, item_o);
        if (added < 0 && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the pending passes must be a dict");
        Py_XDECREF(pending);
        Py_XDECREF(fresh);
        if (added < 0) goto done;
    } else { /* (MeasuredCosts._fit_batch: the fit of its row class, a Python call where it is not made yet) */
        PyObject *fits = attr_of(policy, s_batch_fits), *fit_key = NULL, *fit = NULL, *line = NULL;
        double seen = seconds - base;
        if (fits && PyDict_Check(fits) && (fit_key = PyLong_FromLong(bit_length(rows))))
            fit = PyDict_GetItemWithError(fits, fit_key);
        Py_XDECREF(fits);
        Py_XDECREF(fit_key);
        if (PyErr_Occurred()) goto done;
        if (fit) {
            if (0.0 > seen) seen = 0.0; /* (max(extra_s, 0.0)) */
            if (!(line = fit_line_add(fit, predicted, seen))) goto done;
            Py_DECREF(line);
        } else {
            PyObject *pred_o = PyFloat_FromDouble(predicted), *seen_o = PyFloat_FromDouble(seen), *none = NULL;
            if (pred_o && seen_o) none = PyObject_CallMethodObjArgs(policy, s_fit_batch, key, pred_o, seen_o, NULL);
            Py_XDECREF(pred_o);
            Py_XDECREF(seen_o);
            if (!none) goto done;
            Py_DECREF(none);
        }
    }
    rc = 1;
done:
    doubles_close(&fed);
    doubles_close(&rows_tab);
    Py_XDECREF(cost);
    Py_XDECREF(fed_list);
    Py_XDECREF(extras);
    Py_XDECREF(key);
    Py_XDECREF(batch_greedy);
    Py_XDECREF(greedy);
    Py_XDECREF(item_o);
    return rc;
}

/* a drafted batch's draft lengths (a list of ints): their sum, the widest, whether any drafted. 0, or -1 an error */
static int drafted_of(PyObject *drafted, long *sum, long *most, int *any) {
    if (!PyList_Check(drafted)) {
        PyErr_SetString(PyExc_TypeError, "drafted must be a list");
        return -1;
    }
    *sum = *most = 0;
    *any = 0;
    for (Py_ssize_t r = 0; r < PyList_GET_SIZE(drafted); r++) {
        const long k = PyLong_AsLong(PyList_GET_ITEM(drafted, r));
        if (k == -1 && PyErr_Occurred()) return -1;
        *sum += k;
        *any |= k != 0;
        if (r == 0 || k > *most) *most = k;
    }
    return 0;
}

/* observe_fused(policy, seconds, drafted, fade, kept): MeasuredCosts.observe_pass for a drafted pass of two rows or
   more on a fused pass (observe_fused_pass; in Python 13-24 us a pass between two passes of the C backend at B = 2 to
   8, by a wrapper's timings), the rows it projected read from the policy's _pass_projected. Returns True, or False
   with nothing changed where the Python method observes the pass (one row, no drafts, and as observe_fused_pass). */
static PyObject *observe_fused(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "observe_fused(policy, seconds, drafted, fade, kept)");
        return NULL;
    }
    PyObject *policy = args[0];
    const double seconds = PyFloat_AsDouble(args[1]), fade = PyFloat_AsDouble(args[3]),
                 kept = PyFloat_AsDouble(args[4]);
    long sum, most, pp = -1;
    int any;
    if (PyErr_Occurred() || drafted_of(args[2], &sum, &most, &any) < 0) return NULL;
    const long rows = (long)PyList_GET_SIZE(args[2]);
    if (rows <= 1 || !any) Py_RETURN_FALSE;
    PyObject *pp_o = attr_of(policy, s_pass_projected);
    if (!pp_o) return NULL;
    if (pp_o != Py_None && (pp = PyLong_AsLong(pp_o)) == -1 && PyErr_Occurred()) {
        Py_DECREF(pp_o);
        return NULL;
    }
    Py_DECREF(pp_o);
    const int rc = observe_fused_pass(policy, seconds, rows, sum, most, pp, fade, kept);
    if (rc < 0) return NULL;
    return PyBool_FromLong(rc);
}

/* MeasuredCosts._mean: a table's seconds at `rows` rows, a new count at once, a known one refined */
static int mean_into(PyObject *table, long rows, double seconds) {
    double old;
    const int found = get_double(table, rows, &old);
    if (found < 0) return -1;
    PyObject *key = PyLong_FromLong(rows), *val = PyFloat_FromDouble(found ? 0.8 * old + 0.2 * seconds : seconds);
    const int rc = key && val ? PyDict_SetItem(table, key, val) : -1;
    Py_XDECREF(key);
    Py_XDECREF(val);
    return rc;
}

/* MeasuredCosts._observe_row_pass: a batch's last row's pass, `k` draft tokens (the pass judged where its choice
   promised; a greedy one refines the greedy step at one row; a drafted one, what the drafts added beyond the
   calibration's prediction, into the batch-1 fit). 0, or -1 an error. */
static int observe_row_pass(PyObject *policy, double seconds, long k, double fade, double kept) {
    PyObject *promised = attr_of(policy, s_promised), *greedy = NULL, *cost = NULL, *table = NULL,
             *fit = NULL, *line = NULL;
    int rc = -1;
    if (!promised) return -1;
    const int judge = promised != Py_None;
    Py_DECREF(promised);
    if (judge && judge_pass(policy, 1, seconds, k, fade, kept) < 0) return -1;
    if (!(greedy = attr_of(policy, s_greedy))) return -1;
    if (!PyDict_Check(greedy)) {
        PyErr_SetString(PyExc_TypeError, "greedy passes must be dicts");
        goto done;
    }
    if (!k) {
        rc = mean_into(greedy, 1, seconds);
        goto done;
    }
    if (!(cost = attr_of(policy, s_cost))) goto done;
    rc = 0;
    if (cost == Py_None) goto done;
    rc = -1;
    long horizon;
    double predicted, base;
    if (int_attr(policy, s_horizon, &horizon) < 0 || !(table = attr_of(policy, s_table))) goto done;
    if (!PyList_Check(table)) {
        PyErr_SetString(PyExc_TypeError, "the predicted passes must be a list");
        goto done;
    }
    if (number_at(table, k < horizon ? k : horizon, &predicted) < 0) goto done;
    rc = 0;
    if (!(predicted > 0)) goto done;
    rc = -1;
    const int found = get_double(greedy, 1, &base);
    if (found < 0 || (!found && double_attr(cost, s_step_s, &base) < 0)) goto done;
    const double seen = 0.0 > seconds - base ? 0.0 : seconds - base; /* (max(seconds - base, 0.0)) */
    if (!(fit = attr_of(policy, s_fit)) || !(line = fit_line_add(fit, predicted, seen))) goto done;
    if (!PyTuple_Check(line) || PyTuple_GET_SIZE(line) != 2) {
        PyErr_SetString(PyExc_TypeError, "a fit's line must be a pair");
        goto done;
    }
    if (set_attr(policy, s_extra_fixed, PyTuple_GET_ITEM(line, 0)) < 0 ||
        set_attr(policy, s_extra_factor, PyTuple_GET_ITEM(line, 1)) < 0)
        goto done;
    rc = 0;
done:
    Py_XDECREF(greedy);
    Py_XDECREF(cost);
    Py_XDECREF(table);
    Py_XDECREF(fit);
    Py_XDECREF(line);
    return rc;
}


/* MeasuredCosts._first_at_most on the policy's table `name` (its drafter's calls or starts by rows): the mean at
   `rows`, a first call there taken at most at twice what the nearest measured count scales to (_lookup); then the
   policy's version moves on. 0, or -1 an error */
static int first_at_most(PyObject *policy, PyObject *name, long rows, double seconds) {
    PyObject *table = attr_of(policy, name);
    int rc = -1;
    double old;
    long near, version;
    if (!table) return -1;
    if (!PyDict_Check(table)) {
        PyErr_SetString(PyExc_TypeError, "the drafter's costs must be a dict");
        goto done;
    }
    const int found = get_double(table, rows, &old);
    if (found < 0) goto done;
    if (!found && PyDict_GET_SIZE(table)) {
        double v;
        PyObject *v_o = nearest_value(table, rows, &near);
        if (!v_o || ((v = PyFloat_AsDouble(v_o)) == -1.0 && PyErr_Occurred())) goto done;
        const double ratio = (double)rows / (double)near, cap = 2.0 * (v * (1.0 > ratio ? 1.0 : ratio));
        if (cap < seconds) seconds = cap; /* (min(seconds, cap)) */
    }
    if (mean_into(table, rows, seconds) < 0 || int_attr(policy, s_version, &version) < 0) goto done;
    rc = set_long(policy, s_version, version + 1);
done:
    Py_DECREF(table);
    return rc;
}


/* AcceptanceCounts.observe_rows on the policy's own counts: count_core's loop over every row, the policy's tallies
   (accepted tokens, version, stale, deepest positions) read and written here, its rates refreshed (a Python call)
   where count_core stops for that. *projected: the positions past their first the pass projected. 0, or -1 */
static int count_policy_rows(PyObject *policy, PyObject *states, PyObject *asked, long *projected) {
    PyObject *lists_o[4] = {NULL, NULL, NULL, NULL}, *reach = NULL;
    PyObject *const names[4] = {s_ends, s_gots, s_ends_first, s_gots_first};
    long horizon, stale, version, iter_accepted, fold_top, deepest_all;
    int rc = -1;
    const Py_ssize_t n = PyList_GET_SIZE(states);
    *projected = 0;
    if (int_attr(policy, s_horizon, &horizon) < 0) return -1;
    Py_ssize_t r = 0;
    while (r < n) {
        double reach_1;
        for (int i = 0; i < 4; i++)
            if (!(lists_o[i] = attr_of(policy, names[i]))) goto done;
        if (lists(lists_o, 4) < 0 || int_attr(policy, s_stale, &stale) < 0 || !(reach = attr_of(policy, s_reach)))
            goto done;
        if (!PyList_Check(reach) || number_at(reach, 1, &reach_1) < 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the counts by position must be a list");
            goto done;
        }
        long accepted = 0, counted = 0, deepest = 0, proj = 0;
        if (count_core(states, asked, &r, horizon, lists_o[0], lists_o[1], lists_o[2], lists_o[3], &stale, reach_1,
                       &accepted, &counted, &deepest, &proj) < 0)
            goto done;
        *projected += proj;
        if (int_attr(policy, s_iter_accepted, &iter_accepted) < 0 || int_attr(policy, s_version, &version) < 0 ||
            set_long(policy, s_iter_accepted, iter_accepted + accepted) < 0 ||
            set_long(policy, s_version, version + counted) < 0 || set_long(policy, s_stale, stale) < 0 ||
            int_attr(policy, s_fold_top, &fold_top) < 0)
            goto done;
        if (deepest > fold_top) {
            if (set_long(policy, s_fold_top, deepest) < 0 || int_attr(policy, s_deepest, &deepest_all) < 0 ||
                (deepest > deepest_all && set_long(policy, s_deepest, deepest) < 0))
                goto done;
        }
        for (int i = 0; i < 4; i++) Py_CLEAR(lists_o[i]);
        Py_CLEAR(reach);
        if (counted && 4.0 * (double)stale >= reach_1 && call_method(policy, s_refresh) < 0) goto done;
    }
    rc = 0;
done:
    for (int i = 0; i < 4; i++) Py_XDECREF(lists_o[i]);
    Py_XDECREF(reach);
    return rc;
}

/* the rows a pass projected past their first, as counted, kept for the pass's observation (_pass_projected) */
static int keep_projected(PyObject *policy, long projected) {
    PyObject *x = PyLong_FromLong(projected);
    const int rc = x ? set_attr(policy, s_pass_projected, x) : -1;
    Py_XDECREF(x);
    return rc;
}

/* count_batch(policy, states, asked): AcceptanceCounts.observe_rows (count_policy_rows), the rows the pass projected
   kept for its observation */
static PyObject *count_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long projected;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "count_batch(policy, states, asked)");
        return NULL;
    }
    if (lists(args + 1, 2) < 0) return NULL;
    if (PyList_GET_SIZE(args[2]) != PyList_GET_SIZE(args[1])) {
        PyErr_SetString(PyExc_ValueError, "asked must have one item a row");
        return NULL;
    }
    if (count_policy_rows(args[0], args[1], args[2], &projected) < 0 || keep_projected(args[0], projected) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* observe_batch(policy, fade, kept, states, asked, seconds, drafted, start_s, start_rows, drafter_s, drafter_rows):
   the drafter's start for `start_rows` new rows and its call for `drafter_rows` rows before the pass (observe_start,
   observe_drafter; None: none), the pass's rows counted (AcceptanceCounts.observe_rows) and the pass observed
   (MeasuredCosts.observe_pass; `seconds` None: not observed, a batch's first pass) in one call between two passes:
   as four calls, each reading the policy's state cold after the pass, they took 10-11 us (the counting), 6-10 (the
   pass) and 2-3 us each (the drafter's) at B = 2 on the C backend. The pass of a batch's last row and a drafted fused pass of
   two rows or more are observed here, any other pass by the policy's _observe_handed_back (no drafts, a padded pass,
   tables not made for the cost or too short). True where the pass was observed here (or not at all), else False. */
static PyObject *observe_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "observe_batch(policy, fade, kept, states, asked, seconds, drafted, start_s, "
                                         "start_rows, drafter_s, drafter_rows)");
        return NULL;
    }
    PyObject *policy = args[0], *states = args[3], *asked = args[4], *seconds_o = args[5], *drafted = args[6];
    const double fade = PyFloat_AsDouble(args[1]), kept = PyFloat_AsDouble(args[2]);
    if (PyErr_Occurred() || lists(args + 3, 2) < 0) return NULL;
    for (int i = 7; i < 11; i += 2) { /* (the drafter's start, then its call) */
        if (args[i] == Py_None) continue;
        const double spent = PyFloat_AsDouble(args[i]);
        const long rows = PyLong_AsLong(args[i + 1]);
        if (PyErr_Occurred() || first_at_most(policy, i == 7 ? s_start_s : s_drafter_s, rows, spent) < 0) return NULL;
        if (i == 9) { /* (a drafter call is part of the iteration's time, judged with its pass) */
            double iter_s;
            PyObject *x = NULL;
            if (double_attr(policy, s_iter_s, &iter_s) < 0 || !(x = PyFloat_FromDouble(iter_s + spent)) ||
                set_attr(policy, s_iter_s, x) < 0) {
                Py_XDECREF(x);
                return NULL;
            }
            Py_DECREF(x);
        }
    }
    if (PyList_GET_SIZE(asked) != PyList_GET_SIZE(states)) {
        PyErr_SetString(PyExc_ValueError, "asked must have one item a row");
        return NULL;
    }
    long projected, sum, most;
    int any;
    if (count_policy_rows(policy, states, asked, &projected) < 0) return NULL;
    if (seconds_o == Py_None) { /* (what observe_rows leaves for the pass's observation) */
        if (keep_projected(policy, projected) < 0) return NULL;
        Py_RETURN_TRUE;
    }
    const double seconds = PyFloat_AsDouble(seconds_o);
    if (PyErr_Occurred() || drafted_of(drafted, &sum, &most, &any) < 0) return NULL;
    const long rows = (long)PyList_GET_SIZE(drafted);
    int rc = 0;
    if (rows == 1) {
        if (set_attr(policy, s_pass_projected, Py_None) < 0) return NULL;
        rc = observe_row_pass(policy, seconds, sum, fade, kept) < 0 ? -1 : 1;
    } else if (any) {
        rc = observe_fused_pass(policy, seconds, rows, sum, most, projected, fade, kept);
    }
    if (rc < 0) return NULL;
    if (!rc) { /* (the Python method observes the pass) */
        PyObject *none = NULL;
        if (keep_projected(policy, projected) < 0 ||
            !(none = PyObject_CallMethodObjArgs(policy, s_observe_handed_back, seconds_o, drafted, NULL)))
            return NULL;
        Py_DECREF(none);
    }
    return PyBool_FromLong(rc);
}

