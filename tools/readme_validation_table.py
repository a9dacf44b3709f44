"""Rewrite docs/validation.md's validation table and acceptance-check list from `megasim validate --json`.

    ./build/megasim validate --json > /tmp/validate.json
    python3 tools/readme_validation_table.py /tmp/validate.json docs/validation.md

Table rows: Table 2 step times (its MFU and tokens/s rows repeat the same error), every other
suite's metrics. MFU/HFU errors are printed in points, times in percent; the
communicator-init bounds as "within bound". Checks in the order `validate` prints them.
"""
import json
import os
import sys

# Suites in the table (the MoE suites have their own tables in docs/moe.md).
SUITE_ORDER = ["table2", "table3", "weak530b", "comm_init", "korthikanti2022", "narayanan2021",
               "korthikanti2022_layer", "nvidia_dgxc_h100", "nvidia_dgxc_h100_fp8",
               "megatron_bridge_b200_dense", "megatron_bridge_gb200_dense", "mosaicml_mpt_h100"]
# Checks: the ones validate computes itself, then every suite file's own "checks", in the
# order configs/validation/suites.json lists the suites.
COMPUTED_CHECKS = ["comm_init", "table2_speedup_12288", "table2_step_time_mae", "table2_step_time_max",
                   "table3_cumulative", "table3_directions"]
VALIDATION_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "validation")


def check_order():
    index = json.load(open(os.path.join(VALIDATION_DIR, "suites.json")))
    keys = list(COMPUTED_CHECKS)
    for name in index["suites"]:
        keys += [c["key"] for c in json.load(open(os.path.join(VALIDATION_DIR, name))).get("checks", [])]
    return keys


METRIC = {"step_time_s": "step time", "startup_s": "start-up", "mfu": "MFU", "hfu": "HFU",
          "layer_forward_ms": "layer forward", "layer_backward_ms": "layer backward",
          "layer_fwd_bwd_ms": "layer fwd+bwd"}


def row(c):
    m = c["metric"]
    pub, pred = c["published"], c["predicted"]
    if m in ("mfu", "hfu"):
        cells = (f"{pub * 100:.1f}%", f"{pred * 100:.1f}%", f"{(pred - pub) * 100:+.1f} pt")
    elif m == "step_time_s":
        cells = (f"{pub:.2f} s", f"{pred:.2f} s", f"{c['error_pct']:+.1f}%")
    elif m.endswith("_ms"):
        cells = (f"{pub:.1f} ms", f"{pred:.2f} ms", f"{c['error_pct']:+.1f}%")
    elif c.get("published_is_upper_bound"):
        cells = (f"< {pub:g} s", f"{pred:.1f} s", "within bound" if pred <= pub else "over bound")
    else:
        cells = (f"{pub:g} s", f"{pred:.1f} s", f"{c['error_pct']:+.1f}%")
    return f"| {c['suite']} | {c['name']} | {METRIC.get(m, m)} | " + " | ".join(cells) + " |"


def main(json_path, readme_path):
    data = json.load(open(json_path))
    cases = [c for c in data["cases"] if c["suite"] in SUITE_ORDER and
             (c["suite"] != "table2" or c["metric"] == "step_time_s")]
    cases.sort(key=lambda c: SUITE_ORDER.index(c["suite"]))  # stable: file order within a suite
    table = [row(c) for c in cases]
    summary = data["summary"]
    checks = [f"- **{'PASS' if summary[k]['pass'] else 'FAIL'}** — {summary[k]['detail']}"
              for k in check_order() if k in summary]

    lines = open(readme_path).read().split("\n")
    first = next(i for i, l in enumerate(lines) if l.startswith("| table2 |"))
    last = max(i for i, l in enumerate(lines) if any(l.startswith(f"| {s} |") for s in SUITE_ORDER))
    lines[first:last + 1] = table
    c0 = next(i for i, l in enumerate(lines) if l.startswith("- **") and "Communicator init" in l)
    c1 = c0
    while c1 + 1 < len(lines) and lines[c1 + 1].startswith("- **"):
        c1 += 1
    lines[c0:c1 + 1] = checks
    open(readme_path, "w").write("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
