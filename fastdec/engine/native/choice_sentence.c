/* The batch-1 counting in C: an iteration counted into its sentence's counts at once and kept waiting for the
   input's (observe_iteration), and the iterations that waited counted (flush_iterations). Between two passes of the C
   backend each Python method's frame and lines are read cold: the counting of an iteration took 4-8 us there.
   Part of choice.c (one translation unit: it includes this file after the parts above it). */

/* AcceptanceCounts._count on the policy's own counts: an iteration that reached position `top` and accepted `got`
   added to the input's counts waiting to be folded (a sentence's `first` drafted iteration to its first drafts' too),
   the policy's version, stale count and deepest positions moved on, and its rates refreshed (a Python call) where the
   iterations counted since the last refresh come to a quarter of those counted. 0, or -1 an error */
static int count_input(PyObject *policy, long top, long got, int first) {
    PyObject *lists_o[4] = {NULL, NULL, NULL, NULL}, *reach = NULL;
    PyObject *const names[4] = {s_ends, s_gots, s_ends_first, s_gots_first};
    long version, stale, fold_top, deepest;
    double reach_1;
    int rc = -1;
    for (int i = 0; i < 4; i++)
        if (!(lists_o[i] = attr_of(policy, names[i]))) goto done;
    if (lists(lists_o, 4) < 0 || !(reach = attr_of(policy, s_reach))) goto done;
    if (!PyList_Check(reach) || number_at(reach, 1, &reach_1) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the counts by position must be a list");
        goto done;
    }
    for (int i = 0; i < 4; i++)
        if ((i < 2 || first) && (i % 2 ? got : top) >= PyList_GET_SIZE(lists_o[i])) {
            PyErr_SetString(PyExc_IndexError, "the input's counts are shorter than the draft counted");
            goto done;
        }
    if (int_attr(policy, s_version, &version) < 0 || set_long(policy, s_version, version + 1) < 0) goto done;
    if (first && (add_one(lists_o[2], top) < 0 || add_one(lists_o[3], got) < 0)) goto done;
    if (add_one(lists_o[0], top) < 0 || add_one(lists_o[1], got) < 0) goto done;
    if (int_attr(policy, s_fold_top, &fold_top) < 0) goto done;
    if (top > fold_top) {
        if (set_long(policy, s_fold_top, top) < 0 || int_attr(policy, s_deepest, &deepest) < 0 ||
            (top > deepest && set_long(policy, s_deepest, top) < 0))
            goto done;
    }
    if (int_attr(policy, s_stale, &stale) < 0 || set_long(policy, s_stale, stale + 1) < 0) goto done;
    /* (exact: both sides are small integers or halves) */
    if (4.0 * (double)(stale + 1) >= reach_1 && call_method(policy, s_refresh) < 0) goto done;
    rc = 0;
done:
    for (int i = 0; i < 4; i++) Py_XDECREF(lists_o[i]);
    Py_XDECREF(reach);
    return rc;
}

/* flush_iterations(policy, pending): BatchOneChoice._flush_iterations on the batch-1 iterations that waited, each a
   tuple (top, got, first, accepted, drafted, seconds, drafter_s, start_s): the drafter's start (observe_start) and
   call (its running mean at one row), the input's counts (count_input) and the pass (observe_row_pass), one after
   another as the Python loop counts them (in Python 4-5 us an iteration between two passes of the C backend, about a
   quarter of the policy's time at batch 1). A batched choice's promise still waiting to be judged is left to the
   Python loop: False, nothing counted; else True. */
static PyObject *flush_iterations(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "flush_iterations(policy, pending: list)");
        return NULL;
    }
    PyObject *policy = args[0], *pending = args[1], *promised = attr_of(policy, s_promised);
    if (!promised) return NULL;
    const int waiting = promised != Py_None;
    Py_DECREF(promised);
    if (waiting) Py_RETURN_FALSE;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pending); i++) {
        PyObject *it = PyList_GET_ITEM(pending, i);
        if (!PyTuple_Check(it) || PyTuple_GET_SIZE(it) != 8) {
            PyErr_SetString(PyExc_TypeError, "a waiting iteration must be a tuple of 8");
            return NULL;
        }
        PyObject *start_o = PyTuple_GET_ITEM(it, 7), *drafter_o = PyTuple_GET_ITEM(it, 6);
        const long top = PyLong_AsLong(PyTuple_GET_ITEM(it, 0)), got = PyLong_AsLong(PyTuple_GET_ITEM(it, 1)),
                   accepted = PyLong_AsLong(PyTuple_GET_ITEM(it, 3)), drafted = PyLong_AsLong(PyTuple_GET_ITEM(it, 4));
        const int first = PyObject_IsTrue(PyTuple_GET_ITEM(it, 2));
        const double seconds = PyFloat_AsDouble(PyTuple_GET_ITEM(it, 5));
        if (PyErr_Occurred() || first < 0) return NULL;
        if (start_o != Py_None) {
            const double spent = PyFloat_AsDouble(start_o);
            if (PyErr_Occurred() || first_at_most(policy, s_start_s, 1, spent) < 0) return NULL;
        }
        if (drafter_o != Py_None) { /* (MeasuredCosts._mean at one row: batch 1 judges no batch pass by it) */
            const double spent = PyFloat_AsDouble(drafter_o);
            PyObject *table = PyErr_Occurred() ? NULL : attr_of(policy, s_drafter_s);
            long version;
            if (!table) return NULL;
            const int rc = !PyDict_Check(table) ? -1 : mean_into(table, 1, spent);
            if (rc < 0 && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the drafter's costs must be a dict");
            Py_DECREF(table);
            if (rc < 0 || int_attr(policy, s_version, &version) < 0 || set_long(policy, s_version, version + 1) < 0)
                return NULL;
        }
        if (top) {
            long was;
            if (int_attr(policy, s_iter_accepted, &was) < 0 || set_long(policy, s_iter_accepted, was + accepted) < 0 ||
                count_input(policy, top, got, first) < 0)
                return NULL;
        }
        if (observe_row_pass(policy, seconds, drafted, 1.0, 1.0) < 0) return NULL; /* (no promise: no judgement) */
    }
    Py_RETURN_TRUE;
}

/* observe_iteration(policy, state, drafted, accepted, seconds, drafter_s, asked, start_s, last):
   BatchOneChoice.observe_iteration -- the iteration's deepest position reached and those accepted (_reached), added
   to its sentence's counts at once (made at its first drafted iteration; a sentence's last iteration adds none: no
   choice reads them), the rest kept waiting (_waiting_iterations) and counted by the method _flush_iterations where
   they come to 32 or a quarter of the input's counts. */
static PyObject *observe_iteration(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "observe_iteration(policy, state, drafted, accepted, seconds, drafter_s, "
                                         "asked, start_s, last)");
        return NULL;
    }
    PyObject *policy = args[0], *state = args[1], *extra = NULL, *pending = NULL, *item = NULL, *reach = NULL;
    const long drafted = PyLong_AsLong(args[2]), accepted = PyLong_AsLong(args[3]);
    const int asked = PyObject_IsTrue(args[6]), last = PyObject_IsTrue(args[8]);
    long horizon, top, got;
    int first = 0;
    if (PyErr_Occurred() || asked < 0 || last < 0 || int_attr(policy, s_horizon, &horizon) < 0) return NULL;
    reached(drafted, accepted, horizon, asked, &top, &got);
    if (top) {
        if (!(extra = attr_of(state, s_extra))) return NULL;
        if (!PyDict_Check(extra)) {
            PyErr_SetString(PyExc_TypeError, "a state's extra must be a dict");
            goto done;
        }
        if (last) {
            if ((first = PyDict_Contains(extra, s_policy_counts)) < 0) goto done;
            first = !first;
        } else {
            PyObject *sent = PyDict_GetItemWithError(extra, s_policy_counts);
            if (!sent && PyErr_Occurred()) goto done;
            if (!sent || sent == Py_None) { /* (a sentence's first drafted iteration: its counts made) */
                first = 1;
                if (!(sent = new_counts(extra, horizon))) goto done;
            }
            if (!PyTuple_Check(sent) || PyTuple_GET_SIZE(sent) != 2 || lists(&PyTuple_GET_ITEM(sent, 0), 2) < 0) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a sentence's counts must be two lists");
                goto done;
            }
            PyObject *s_reach = PyTuple_GET_ITEM(sent, 0), *s_acc = PyTuple_GET_ITEM(sent, 1);
            if (top >= PyList_GET_SIZE(s_reach) || got >= PyList_GET_SIZE(s_acc) || got < 0) {
                PyErr_SetString(PyExc_IndexError, "a sentence's counts are shorter than the draft counted");
                goto done;
            }
            if (count_into(s_reach, s_acc, top, got) < 0) goto done;
        }
    }
    double reach_1;
    if (!(pending = attr_of(policy, s_waiting_iterations)) || !PyList_Check(pending) ||
        !(reach = attr_of(policy, s_reach)) || !PyList_Check(reach)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "waiting iterations and counts must be lists");
        goto done;
    }
    if (number_at(reach, 1, &reach_1) < 0 ||
        !(item = Py_BuildValue("(llNllOOO)", top, got, PyBool_FromLong(first), accepted, drafted, args[4], args[5],
                               args[7])) ||
        PyList_Append(pending, item) < 0)
        goto done;
    const Py_ssize_t n = PyList_GET_SIZE(pending);
    Py_CLEAR(item);
    if ((n >= 32 || 4.0 * (double)n >= reach_1) && call_method(policy, s_flush_iterations) < 0) goto done;
    Py_XDECREF(extra);
    Py_DECREF(pending);
    Py_DECREF(reach);
    Py_RETURN_NONE;
done:
    Py_XDECREF(extra);
    Py_XDECREF(pending);
    Py_XDECREF(item);
    Py_XDECREF(reach);
    return NULL;
}

static PyObject *s_skip, *s_first_stands, *s_least_after, *s_no_length_pays, *s_choose;

/* a dict's value at the int key 1 as a double: 1, 0 not there, -1 an error */
static int at_one(PyObject *dict, double *out) {
    if (!PyDict_Check(dict)) {
        PyErr_SetString(PyExc_TypeError, "the drafter's costs must be a dict");
        return -1;
    }
    return get_double(dict, 1, out);
}

/* a sentence's first draft read from the standing answers (BatchOneChoice._best_length: _first_stands[margin], while
   what they were made with holds; one use spent): 1 (*out), 0 none stands, -1 an error */
static int first_standing(PyObject *policy, PyObject *margin, double base, double factor, long limit, long *out) {
    PyObject *stands = attr_of(policy, s_first_stands), *spent = NULL;
    int rc = -1;
    if (!stands) return -1;
    if (!PyDict_Check(stands)) {
        PyErr_SetString(PyExc_TypeError, "the standing first choices must be a dict");
        goto done;
    }
    PyObject *entry = PyDict_GetItemWithError(stands, margin);
    rc = 0;
    if (!entry) {
        rc = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3 || !PyList_Check(PyTuple_GET_ITEM(entry, 1)) ||
        !PyTuple_Check(PyTuple_GET_ITEM(entry, 2)) || PyTuple_GET_SIZE(PyTuple_GET_ITEM(entry, 2)) != 2) {
        PyErr_SetString(PyExc_TypeError, "a standing first choice must be (left, answers, (base, factor))");
        rc = -1;
        goto done;
    }
    PyObject *upto = PyTuple_GET_ITEM(entry, 1), *made = PyTuple_GET_ITEM(entry, 2);
    const long left = PyLong_AsLong(PyTuple_GET_ITEM(entry, 0));
    const double m0 = PyFloat_AsDouble(PyTuple_GET_ITEM(made, 0)), m1 = PyFloat_AsDouble(PyTuple_GET_ITEM(made, 1));
    if (PyErr_Occurred()) {
        rc = -1;
        goto done;
    }
    if (!(left > 0 && 0.5 * m0 < base && base < 2.0 * m0 && 0.5 * m1 < factor && factor < 2.0 * m1)) goto done;
    const Py_ssize_t n = PyList_GET_SIZE(upto);
    if (!n) {
        PyErr_SetString(PyExc_ValueError, "a standing first choice without answers");
        rc = -1;
        goto done;
    }
    rc = -1;
    if (!(spent = Py_BuildValue("(lOO)", left - 1, upto, made))) goto done;
    *out = PyLong_AsLong(PyList_GET_ITEM(upto, limit < n ? limit : n - 1)); /* (upto[limit], else upto[-1]) */
    if (*out == -1 && PyErr_Occurred()) goto done;
    if (PyDict_SetItem(stands, margin, spent) < 0) goto done;
    rc = 1;
done:
    Py_DECREF(stands);
    Py_XDECREF(spent);
    return rc;
}

/* choose_one(policy, state): BatchOneChoice.choose, the batch-1 loop's choice of the next draft length, where its
   common case is decided here -- no "no draft" held, a cost, counts seen, the drafter's costs measured at one row, and
   the sentence's own counts (length_of) or a standing first choice -- and the rest by the method itself (nothing
   changed before it is called); a choice of no draft goes on in the method _no_length_pays. As a Python method
   between two passes of the C backend, its frame and lines read cold, it took 7 us a call. */
static PyObject *choose_one(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "choose_one(policy, state)");
        return NULL;
    }
    PyObject *policy = args[0], *state = args[1], *extra = NULL, *skip = NULL, *cost = NULL, *reach = NULL,
             *greedy = NULL, *d = NULL, *s = NULL, *margin_o = NULL, *result = NULL, *q = NULL, *least = NULL,
             *table = NULL;
    long max_draft, horizon, version, best_n = 0;
    int method = 0; /* 1: the Python method decides */
    if (int_attr(state, s_max_draft, &max_draft) < 0 || int_attr(policy, s_horizon, &horizon) < 0) return NULL;
    const long limit = max_draft < horizon ? max_draft : horizon;
    if (limit <= 0) return PyLong_FromLong(0);
    if (!(extra = attr_of(state, s_extra))) return NULL;
    if (!PyDict_Check(extra)) {
        PyErr_SetString(PyExc_TypeError, "a state's extra must be a dict");
        goto done;
    }
    PyObject *on = PyDict_GetItemWithError(extra, s_drafter_started);
    const int started = on ? PyObject_IsTrue(on) : 0;
    if (started < 0 || (!on && PyErr_Occurred())) goto done;
    if (!(skip = attr_of(policy, s_skip)) || int_attr(policy, s_version, &version) < 0) goto done;
    if (!PyTuple_Check(skip) || PyTuple_GET_SIZE(skip) != 5) {
        PyErr_SetString(PyExc_TypeError, "a held \"no draft\" must be a tuple of 5");
        goto done;
    }
    const long held_at = PyLong_AsLong(PyTuple_GET_ITEM(skip, 0));
    if (held_at == -1 && PyErr_Occurred()) goto done;
    if (held_at == version) { /* (a "no draft" may hold: the method's) */
        method = 1;
        goto done;
    }
    double seen, step, d1, s1 = 0.0, fixed, factor, margin;
    if (!(cost = attr_of(policy, s_cost))) goto done;
    if (cost == Py_None) { /* (the method says what to call first) */
        method = 1;
        goto done;
    }
    if (!(reach = attr_of(policy, s_reach)) || !PyList_Check(reach) || number_at(reach, 1, &seen) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the counts by position must be a list");
        goto done;
    }
    if (seen == 0.0) { /* nothing known yet: a probe's worth of draft to learn from */
        long probe_len;
        if (int_attr(policy, s_probe_len, &probe_len) < 0) goto done;
        result = PyLong_FromLong(limit < probe_len ? limit : probe_len);
        goto done;
    }
    int found;
    if (!(greedy = attr_of(policy, s_greedy)) || !PyDict_Check(greedy)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "greedy passes must be dicts");
        goto done;
    }
    if ((found = get_double(greedy, 1, &step)) < 0 || (!found && double_attr(cost, s_step_s, &step) < 0)) goto done;
    if (!(d = attr_of(policy, s_drafter_s)) || (found = at_one(d, &d1)) < 0) goto done;
    if (!found) { /* (a drafter cost not measured at one row: the method's lookup) */
        method = 1;
        goto done;
    }
    if (!started) {
        if (!(s = attr_of(policy, s_start_s)) || (found = at_one(s, &s1)) < 0) goto done;
        if (!found) {
            method = 1;
            goto done;
        }
    }
    if (double_attr(policy, s_extra_fixed, &fixed) < 0 || double_attr(policy, s_extra_factor, &factor) < 0 ||
        !(margin_o = attr_of(policy, s_margin)) || ((margin = PyFloat_AsDouble(margin_o)) == -1.0 && PyErr_Occurred()))
        goto done;
    const double base = step + (d1 + fixed + (started ? 0.0 : s1)); /* (_best_length's base, in its order) */
    PyObject *sent = PyDict_GetItemWithError(extra, s_policy_counts);
    if (!sent && PyErr_Occurred()) goto done;
    if (sent && sent != Py_None) {
        double weight;
        if (!PyTuple_Check(sent) || PyTuple_GET_SIZE(sent) != 2) {
            PyErr_SetString(PyExc_ValueError, "a sentence's counts must be two lists");
            goto done;
        }
        if (!(q = attr_of(policy, s_q)) || !(least = attr_of(policy, s_least_after)) ||
            !(table = attr_of(policy, s_table)) || double_attr(policy, s_weight, &weight) < 0)
            goto done;
        PyObject *check[5] = {PyTuple_GET_ITEM(sent, 0), PyTuple_GET_ITEM(sent, 1), q, least, table};
        if (lists(check, 5) < 0 ||
            length_of(limit, check[0], check[1], q, least, table, weight, base, factor, margin / step, &best_n) < 0)
            goto done;
    } else if (started) { /* (a started drafter without counts: the method's) */
        method = 1;
        goto done;
    } else {
        if ((found = first_standing(policy, margin_o, base, factor, limit, &best_n)) < 0) goto done;
        if (!found) { /* (the standing answers made again: the method's) */
            method = 1;
            goto done;
        }
    }
    if (!best_n) {
        PyObject *lim = PyLong_FromLong(limit), *step_o = lim ? PyFloat_FromDouble(step) : NULL;
        if (step_o)
            result = PyObject_CallMethodObjArgs(policy, s_no_length_pays, lim, started ? Py_True : Py_False, step_o,
                                                state, NULL);
        Py_XDECREF(lim);
        Py_XDECREF(step_o);
        goto done;
    }
    PyObject *zero = PyFloat_FromDouble(0.0);
    if (zero && set_attr(policy, s_skipped_s, zero) == 0) result = PyLong_FromLong(best_n);
    Py_XDECREF(zero);
done:
    if (method && !PyErr_Occurred()) result = PyObject_CallMethodOneArg(policy, s_choose, state);
    Py_XDECREF(extra);
    Py_XDECREF(skip);
    Py_XDECREF(cost);
    Py_XDECREF(reach);
    Py_XDECREF(greedy);
    Py_XDECREF(d);
    Py_XDECREF(s);
    Py_XDECREF(margin_o);
    Py_XDECREF(q);
    Py_XDECREF(least);
    Py_XDECREF(table);
    return result;
}

static PyObject *s_hold, *s_new_sentence;

/* start_sentence(policy, verifier): CostAwarePolicy.prepare(verifier, 1) before a batch-1 sentence, where the policy
   was prepared for this verifier and has its cost: the method new_sentence called only where a "no draft" is held
   and counts were seen (it may end the hold), the cost already read; else the method prepare itself. (Three Python
   methods, their frames read cold after a pass of the C backend, took 2-3 us a sentence.) */
static PyObject *start_sentence(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "start_sentence(policy, verifier)");
        return NULL;
    }
    PyObject *policy = args[0], *verifier = args[1], *prepared = NULL, *cost = NULL, *skip = NULL, *reach = NULL,
             *result = NULL;
    long hold, version;
    double seen;
    if (!(prepared = attr_of(policy, s_prepared_for)) || !(cost = attr_of(policy, s_cost))) goto done;
    if (prepared != verifier || cost == Py_None) { /* (what it measures or reads of the verifier: the method's) */
        PyObject *one = PyLong_FromLong(1);
        if (one) result = PyObject_CallMethodObjArgs(policy, s_prepare, verifier, one, NULL);
        Py_XDECREF(one);
        goto done;
    }
    if (int_attr(policy, s_hold, &hold) < 0 || !(skip = attr_of(policy, s_skip)) ||
        int_attr(policy, s_version, &version) < 0)
        goto done;
    if (!PyTuple_Check(skip) || PyTuple_GET_SIZE(skip) != 5) {
        PyErr_SetString(PyExc_TypeError, "a held \"no draft\" must be a tuple of 5");
        goto done;
    }
    const long held_at = PyLong_AsLong(PyTuple_GET_ITEM(skip, 0));
    if ((held_at == -1 && PyErr_Occurred()) || !(reach = attr_of(policy, s_reach))) goto done;
    if (!PyList_Check(reach) || number_at(reach, 1, &seen) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the counts by position must be a list");
        goto done;
    }
    if ((hold || held_at == version) && seen != 0.0) { /* (a hold that the new sentence may end: the method's) */
        result = PyObject_CallMethodNoArgs(policy, s_new_sentence);
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(prepared);
    Py_XDECREF(cost);
    Py_XDECREF(skip);
    Py_XDECREF(reach);
    return result;
}
