"""Writes one table or figure of the GAD track (``fastdec tables gad NAME``) from its benchmark runs."""
from __future__ import annotations

import json

from fastdec.bench.methods import parse_method
from fastdec.tracks.base import write_policy_item
from fastdec.tracks.gad.paper import GAD_BIG_REFERENCE
from fastdec.tracks.gad.plan import AR_ROWS, BATCH_TABLE, CNNDM_TABLE, NAT_BIG, PAPER_TABLES, TABLES, Plan, table_items


def make_table(name: str, config: dict, R: str, output: str) -> None:
    from fastdec.tracks.gad import tables as T

    if name == "gad_policy":
        return write_policy_item(table_items(config, R), "gad", output)
    p = Plan(config, R)
    g = p.g
    if name == BATCH_TABLE:
        from fastdec.bench.batch_curves import write_batch_curve

        write_batch_curve(p.run("batch"), p.batch_curves, p.batch_sizes, p.baseline, "figure7", output,
                          title=(f"{config['experiment']}: GAD (k={p.k}) and GAD++ {parse_method(p.he).label} at "
                                 f"batch sizes {p.batch_sizes}, {config['device']}, {g['threads']} thread(s)"))
        return
    if name == "gad_figure4_speedup":
        run, beam = p.run("test"), parse_method(p.baseline)
        he = parse_method(p.he)
        speedup = T.per_sentence_speedup(run.records(), he.label, beam.label)
        stats = T.speedup_histogram(
            speedup, output, xlabel=f"speedup over beam search (b={beam.beam}), per sentence",
            title=f"GAD++ (k={he.k}, top-{he.beta}, tau={he.tau:g}) vs beam search, {speedup.size} sentences\n"
                  "(paper, WMT14 test, k=25 top-5 tau=3.0: most sentences 3x-6x)")
        print(json.dumps({"method": he.label, "baseline": beam.label, **stats}), flush=True)
        return
    if name == "gad_figure1_bleu_speedup":
        from fastdec.tracks.gad.figures import figure1, paper_points

        ref = g["paper_reference"]
        paper = paper_points(T.paper_table1(ref), cited=ref == "wmt14_en-de")
        beam = parse_method(p.baseline).beam
        points = figure1(T.table1(p.run("test"), ref), paper, output,
                         title=f"ours: {config['experiment']}, {config['device']}, speedup over fairseq beam {beam}",
                         paper_title=f"paper: {ref} (Xia et al. Table 1 / Ge et al. Table 14; NAT systems cited)")
        print(json.dumps(points), flush=True)
        return
    if name == CNNDM_TABLE:
        from fastdec.tracks.gad.cnndm import table10

        item = table_items(config, R)[f"gad/tables/{CNNDM_TABLE}.csv"]
        ref, encoder, vocab = item.inputs[-3:]
        df = table10(p.run("test"), {n: p.run(n) for n in AR_ROWS}, p, ref, encoder, vocab)
    elif name == "gad_table10_hyperparameters":
        from fastdec.tracks.gad.hyperparams import gad_table10

        df = gad_table10(config)
    elif name == PAPER_TABLES["table4"]:
        df = T.table4_big(p.run("test"))
    elif name == PAPER_TABLES["table5"]:
        df = T.table5_nat_big(p.run("test"), [p.gad, p.hq, p.he], NAT_BIG)
    elif name == PAPER_TABLES["table6"]:
        teacher = p.L.eval("teacher_b5")  # the MT chain's teacher, when the config decodes it (tracks.mt_at)
        with_teacher = teacher in table_items(config, R)[f"gad/tables/{name}.csv"].inputs
        df = T.table6_teachers(p.run("test"), "ensemble" if config.get("distill", {}).get("teachers", 1) > 1
                               else "single", "big" if g["paper_reference"] == GAD_BIG_REFERENCE else "base",
                               json.load(open(teacher))["bleu"] if with_teacher else None)
    elif name == "gad_table1":
        df = T.table1(p.run("test"), g["paper_reference"])
    elif name == "gad_table2_block_size":
        df = T.table2_block_size(p.run("valid"), g["block_sizes"], g["table2"]["beta"], g["table2"]["tau"])
    elif name == "gad_table3_beta_tau":
        df = T.table3_beta_tau(p.run("valid"), p.k, g["grid"]["betas"], g["grid"]["taus"])
    elif name == "gad_table7_modules":
        df = T.table7_modules(p.run("test"), p.labels([p.he, p.gad, *p.cheap, "greedy"]))
    elif name == "gad_table9_repetition":
        df = T.table9_repetition(p.run("test"), p.labels(["greedy", p.baseline, f"nat:k={p.k}", p.gad, p.hq, p.he]),
                                 hq=parse_method(p.hq).label)
    else:
        raise ValueError(f"the gad track has no table {name!r}; it has {', '.join(TABLES)}, "
                         f"gad_table10_hyperparameters, {', '.join(PAPER_TABLES.values())}")
    # Table 1 has every direction (journal version, Table 14), Table 10 is the recipe, Tables 4-6 are En-De by
    # construction; the others are En-De only
    if name not in ("gad_table1", "gad_table10_hyperparameters", CNNDM_TABLE, *PAPER_TABLES.values()):
        df = T.paper_en_de_only(df, g["paper_reference"], "Table " + name.split("_")[1][5:])
    df.to_csv(output, index=False)
    print(df.to_string(index=False), flush=True)
