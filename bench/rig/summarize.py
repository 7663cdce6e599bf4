#!/usr/bin/env python3
"""Summarises the one-GPU rig's logs (bench/rig/run.sh): per log, one verdict line and details.

  summarize.py PATH...     (log files, or folders searched for *.log)

nccl-tests logs: rows, rows with #wrong != 0, rows cut short (a hang or a crash inside a row),
"Test ... failure" / "Test timeout" lines, out-of-bounds values, whether the test concluded, WARN
lines (NCCL's and braid's); with -C 1 also the host time per call per size. Dying-rank logs: each
surviving rank's JSON line. Every log: run.sh's exit line (124/137: killed at its time limit).

Row format (nccl-tests 2.19, src/util.cu): "%12li  %12li  %8s  %6s  %6s" (size, count, type, redop,
root), then "  %7s  %6s  %6s  %6g" (time, algbw, busbw, #wrong; "N/A" without -c) out of place and
again in place; lines starting with '#' are comments; the column header names the #wrong columns.
Other ranks' WARN lines start with a newline, so they can fall between a row's parts.

Exit code: 1 if any log through braid (or of a kind the rig does not know) shows wrong rows, a hang
or timeout, a failure, or a dying-rank result other than OK; plain-NCCL logs are the baseline and
are reported but do not fail the summary (unless RIG_STRICT_PLAIN=1).
"""
import json
import os
import re
import statistics
import sys

# The host name starts with a letter: a log line that interrupts an nccl-tests row follows its
# digits directly ("-1vm:686:686 [0] BRAID INFO ...").
LOG_LINE = re.compile(r"[A-Za-z][\w.-]*:\d+:\d+(?: \[\d+\])? (NCCL|BRAID) (WARN|INFO|TRACE|VERSION)\b")
FAILURE = re.compile(r"Test (NCCL|CUDA) failure|: Test failure|Test timeout|BAD TERMINATION|"
                     r"Segmentation fault|Aborted|core dumped|terminate called|cannot be preloaded|"
                     r"error while loading shared libraries")
BANNER = re.compile(r"BRAID INFO .*NCCL drop-in")
OOB = re.compile(r"#\s*Out of bounds values\s*:\s*(\d+)")
EXIT = re.compile(r"^# exit: (-?\d+)")
LIMIT_RCS = (124, 137)


def is_int(tok):
    return re.fullmatch(r"-?\d+", tok) is not None


def is_num(tok):
    if tok == "N/A":
        return True
    try:
        float(tok)
        return True
    except ValueError:
        return False


def normalise_warn(line):
    """A WARN line without its host:pid:tid prefix, so that repeats from many ranks count once."""
    m = LOG_LINE.search(line)
    return line[m.start():].split(" ", 1)[1].strip() if m else line.strip()


def program_lines(f):
    """The log's lines with the program's own output made whole again: a rank's log line may
    begin in the middle of a line the program was printing (nccl-tests prints a row's size before
    it runs the calls, which log), so the program's part before it is joined with the text after
    the log line(s). Log lines come out as lines of their own, before the row they interrupted."""
    pending = ""
    for raw in f:
        line = raw.rstrip("\n")
        m = LOG_LINE.search(line)
        if m is None:
            yield pending + line
            pending = ""
            continue
        start = m.start()
        pending += line[:start]
        yield line[start:]
    if pending:
        yield pending


class Log:
    def __init__(self, path):
        self.path = path
        self.command = ""
        self.rc = None
        self.skipped = False
        self.warns = []
        self.failures = []
        self.lines = []
        self.banners = 0
        with open(path, errors="replace") as f:
            for line in program_lines(f):
                if line.startswith("# command: ") and not self.command:
                    self.command = line[len("# command: "):]
                m = EXIT.match(line)
                if m:
                    self.rc = int(m.group(1))
                if line.startswith("# SKIPPED"):
                    self.skipped = True
                if LOG_LINE.search(line):
                    if BANNER.search(line):
                        self.banners += 1
                    if " WARN " in line:
                        self.warns.append(line)
                    continue
                if FAILURE.search(line) and not line.startswith("# command"):
                    self.failures.append(line.strip())
                self.lines.append(line)
        name = os.path.basename(path)
        self.plain = name.startswith("plain")
        self.timed_out = self.rc in LIMIT_RCS

    def kind(self):
        text = "\n".join(self.lines[:40])
        if "nccl-tests version" in text or "Collective test starting" in text or "_perf" in self.command:
            return "nccl-tests"
        if "dying_rank" in self.command:
            return "dying"
        return "other"


def parse_nccl_tests(log):
    """Rows of an nccl-tests log, with the positions of the #wrong columns from its header."""
    wrong_cols, width, time_label = [8, 12], 13, "time"
    rows, cut = [], []
    pending = None
    concluded = False
    oob = 0
    for line in log.lines:
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            toks = s[1:].split()
            if toks[:2] == ["size", "count"] and "#wrong" in toks:
                wrong_cols = [i for i, t in enumerate(toks) if t == "#wrong"]
                width = len([t for t in toks if t != "timestamp"])
                time_label = toks[5]
            if "Collective test concluded" in s:
                concluded = True
            m = OOB.search(s)
            if m:
                oob += int(m.group(1))
            continue
        toks = s.split()
        # Collectives without an operator (hypercube) print a blank redop column: the root comes
        # where the operator would.
        if len(toks) >= 4 and is_int(toks[0]) and is_int(toks[1]) and not is_num(toks[2]) and is_int(toks[3]):
            toks.insert(3, "-")
        starts_row = (len(toks) >= 5 and is_int(toks[0]) and is_int(toks[1]) and not is_num(toks[2])
                      and is_int(toks[4]))
        if starts_row:
            if pending is not None:
                cut.append(pending)
            pending = toks
        elif pending is not None and all(is_num(t) for t in toks):
            pending = pending + toks
        else:
            continue
        if pending is not None and len(pending) >= width:
            rows.append(pending)
            pending = None
    if pending is not None:
        cut.append(pending)
    wrong = []
    for r in rows:
        for c in wrong_cols:
            if c < len(r) and r[c] != "N/A" and is_num(r[c]) and float(r[c]) != 0:
                wrong.append(r)
                break
    return {"rows": rows, "wrong": wrong, "cut": cut, "concluded": concluded, "oob": oob,
            "time_label": time_label, "wrong_cols": wrong_cols}


def busbw_by_size(parsed):
    """Out-of-place busbw (GB/s) per size of parse_nccl_tests' rows; with -d all, the first
    type's row of each size."""
    sizes = {}
    for row in parsed["rows"]:
        try:
            sizes.setdefault(int(row[0]), float(row[7]))
        except (ValueError, IndexError):
            pass
    return sizes


ROUTED_EXCHANGE = re.compile(r"\bINFO routed exchange: \d+ flows")


def routed_exchanges(path):
    """braid's "routed exchange" INFO lines in a log (one per routed call and rank), which Log
    leaves out of its lines."""
    with open(path, errors="replace") as f:
        return sum(1 for line in f if ROUTED_EXCHANGE.search(line))


def summarise_nccl_tests(log, out):
    p = parse_nccl_tests(log)
    # A log without a single row checked nothing: a failure too, not a pass.
    bad = bool(p["wrong"] or p["cut"] or log.failures or p["oob"] or log.timed_out
               or not p["concluded"] or (log.rc not in (None, 0)) or not p["rows"])
    out.append(f"rows={len(p['rows'])} wrong={len(p['wrong'])} cut_short={len(p['cut'])} "
               f"failures={len(log.failures)} oob={p['oob']} concluded={'yes' if p['concluded'] else 'NO'} "
               f"warn={len(log.warns)}")
    for r in p["wrong"][:8]:
        out.append("  WRONG: " + " ".join(r[:5]) + "  #wrong " +
                   " / ".join(r[c] for c in p["wrong_cols"] if c < len(r)))
    for r in p["cut"][:3]:
        out.append("  CUT SHORT (hang or crash in this row): " + " ".join(r))
    if p["time_label"] == "cputime" and p["rows"]:
        out.append("  host time per call, us (out of place / in place):")
        for r in p["rows"]:
            out.append(f"    {r[0]:>12} {r[2]:>8} {r[3]:>6}  {r[5]:>8} / {r[9]:>8}")
    return bad


def summarise_dying(log, out):
    results = []
    for line in log.lines:
        s = line.strip()
        if s.startswith("{") and '"rank"' in s:
            try:
                results.append(json.loads(s))
            except ValueError:
                out.append("  unparsed: " + s[:200])
    nranks = max([r.get("nranks", 0) for r in results] or [0])
    # --victim none (the faults suite): nobody leaves, so every rank reports, and all the same way:
    # all fell back together and completed, or all saw the error and aborted in time.
    no_victim = any(r.get("victim") in (None, -2) for r in results)
    expected = (nranks if no_victim else nranks - 1) if nranks > 1 else None
    survivors = [r for r in results if r.get("result") in ("OK", "SLOW ABORT", "HANG", "NO ERROR", "COMPLETED")]
    outcomes = {r.get("result") for r in results}
    if no_victim:
        bad = log.timed_out or not results or not outcomes <= {"OK", "COMPLETED"} or len(outcomes) > 1
    else:
        bad = log.timed_out or not results or any(r.get("result") != "OK" for r in results)
    if expected is not None and len(survivors) < expected:
        bad = True
    # A failure injected (BRAID_FAULT) at a step the run never reached proves nothing: braid says
    # "failure injected at step ..." where it fires.
    fault = re.search(r"BRAID_FAULT (\S+)", log.lines[0] if log.lines else "")
    # braid says it in a WARN line, which Log keeps apart from the program's own lines.
    if fault and not any("failure injected" in line for line in log.lines + log.warns):
        out.append(f"  FAULT NOT REACHED: BRAID_FAULT {fault.group(1)} never fired (the step did not run)")
        bad = True
    out.append(("ranks" if no_victim else "survivors") + f" reporting={len(survivors)}" + (f" of {expected}" if expected is not None else "") +
               f" other={len(results) - len(survivors)} warn={len(log.warns)}")
    for r in sorted(results, key=lambda r: r.get("rank", -1)):
        fields = [f"rank {r.get('rank')}", str(r.get("result"))]
        if "error_string" in r:
            fields.append(f"error {r.get('error_code')} '{r.get('error_string')}' from {r.get('error_from')}")
            fields.append(f"after {r.get('seconds_to_error')} s")
            fields.append(f"abort {r.get('abort_seconds')} s")
            if r.get("last_error"):
                fields.append(f"last_error '{r['last_error'][:120]}'")
        elif "error" in r:
            fields.append(str(r["error"]))
        elif "seconds_waited" in r:
            fields.append(f"no error after {r['seconds_waited']} s, {r.get('calls_done')} calls")
        out.append("  " + ", ".join(fields))
    return bad


def summarise(path):
    log = Log(path)
    out = []
    if log.skipped:
        return False, [f"SKIP  {path}"] + ["  " + l for l in log.lines if l.startswith("# SKIPPED")]
    kind = log.kind()
    if kind == "nccl-tests":
        bad = summarise_nccl_tests(log, out)
    elif kind == "dying":
        bad = summarise_dying(log, out)
    else:
        bad = log.timed_out or log.rc not in (None, 0) or bool(log.failures)
        out.append(f"warn={len(log.warns)}")
    if log.timed_out:
        out.append("  TIMEOUT: killed at run.sh's time limit (a hang, or too slow)")
    if log.banners:
        out.append(f"  braid loaded: {log.banners} line(s) of braid's drop-in banner")
    failures = []
    for f in log.failures:
        f = re.sub(r"pid \d+", "pid N", f)
        if f not in failures:
            failures.append(f)
    for f in failures[:5]:
        out.append("  FAILURE: " + f[:200])
    uniq = []
    for w in log.warns:
        n = normalise_warn(w)
        if n not in uniq:
            uniq.append(n)
    for w in uniq[:5]:
        out.append("  WARN: " + w[:200])
    if len(uniq) > 5:
        out.append(f"  ... {len(uniq) - 5} more distinct WARN lines")
    counts = not log.plain or os.environ.get("RIG_STRICT_PLAIN") == "1"
    verdict = ("FAIL" if counts else "BAD (baseline)") if bad else "ok"
    head = f"{verdict:<5} rc={log.rc}  {path}"
    return bad and counts, [head] + ["  " + l if not l.startswith("  ") else l for l in out]


# The hosttime suite's logs: [probe_][<collective>_]<plain|braid>_n<ranks>[_r<round>].log, where no
# collective named is all_reduce.
HOSTTIME_NAME = r"(?:(all_gather)_)?(plain|braid)_n(\d+)(?:_r\d+)?\.log$"
HOSTTIME_LOG = re.compile(r"(?:^|/)" + HOSTTIME_NAME)
PROBE_LOG = re.compile(r"(?:^|/)probe_" + HOSTTIME_NAME)
PROBE_ROW = re.compile(r"^(\d+) (\d+) (out|in) ([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+)$")
HOST_TIME_BUDGET_US = 5.0  # braid's host time per call may exceed NCCL's by this much (median)


def compare_host_times(paths):
    """Median over rounds of each size's host time per call, plain against braid (hosttime suite)."""
    times = {}  # ((ranks, collective), how, bytes, placement) -> [us, ...]
    for path in paths:
        m = HOSTTIME_LOG.search(path)
        if not m or os.path.basename(os.path.dirname(path)) != "hosttime":
            continue
        p = parse_nccl_tests(Log(path))
        if p["time_label"] != "cputime":
            continue
        for r in p["rows"]:
            for placement, col in (("out", 5), ("in", 9)):
                if col < len(r) and is_num(r[col]):
                    times.setdefault((group_of(m), m.group(2), int(r[0]), placement), []).append(float(r[col]))
    return host_time_table(times, "median over rounds")


def group_of(match):
    """A hosttime log's table: (ranks, collective)."""
    return int(match.group(3)), match.group(1) or "all_reduce"


def host_time_table(rounds, what):
    """Per rank count, collective and size, braid's median over rounds against plain NCCL's, flagged
    where it is over the budget. `rounds`: ((ranks, collective), how, bytes, placement) -> [us per round]."""
    out = []
    for group in sorted({k[0] for k in rounds}):
        ranks, collective = group
        rows = sorted({(k[2], k[3]) for k in rounds if k[0] == group}, key=lambda x: (x[0], x[1] != "out"))
        label = f"{ranks} ranks" if collective == "all_reduce" else f"{ranks} ranks, {collective}"
        out.append(f"== host time per call, {label}, {what} (us): plain / braid / braid - plain")
        over = 0
        for size, placement in rows:
            plain = rounds.get((group, "plain", size, placement))
            braid = rounds.get((group, "braid", size, placement))
            if not plain or not braid:
                continue
            d = statistics.median(braid) - statistics.median(plain)
            flag = "" if d <= HOST_TIME_BUDGET_US else f"  OVER (+{HOST_TIME_BUDGET_US:g} us allowed)"
            over += bool(flag)
            out.append(f"  {size:>12} {placement:>3}  {statistics.median(plain):8.2f} / {statistics.median(braid):8.2f}"
                       f" / {d:+7.2f}  ({len(plain)}/{len(braid)} rounds){flag}")
        out.append(f"  {over} sizes over NCCL's host time + {HOST_TIME_BUDGET_US:g} us")
    return out


def compare_probe_host_times(paths):
    """host_time_probe's logs (hosttime suite): each call timed alone, a per-rank median per size; per
    round the mean over ranks, then the median over rounds, plain against braid."""
    rounds = {}  # (ranks, how, bytes, placement) -> [per-round mean over ranks of the rank medians]
    for path in paths:
        m = PROBE_LOG.search(path)
        if not m or os.path.basename(os.path.dirname(path)) != "hosttime":
            continue
        per_rank = {}
        for line in Log(path).lines:
            row = PROBE_ROW.match(line.strip())
            if row:
                per_rank.setdefault((int(row.group(2)), row.group(3)), []).append(float(row.group(4)))
        for (size, placement), medians in per_rank.items():
            rounds.setdefault((group_of(m), m.group(2), size, placement), []).append(statistics.mean(medians))
    return host_time_table(rounds, "each call alone (host_time_probe): median of calls, mean over ranks, "
                                   "median over rounds")


def main(argv):
    order = ["preflight", "correctness", "dying", "faults", "hosttime", "fuzz"]
    paths = []
    for a in argv or ["."]:
        if os.path.isdir(a):
            found = []
            for d, _, files in os.walk(a):
                found += [os.path.join(d, f) for f in files if f.endswith(".log")]
            suite = lambda p: os.path.basename(os.path.dirname(p))
            paths += sorted(found, key=lambda p: (order.index(suite(p)) if suite(p) in order else len(order), p))
        else:
            paths.append(a)
    if not paths:
        print("no logs")
        return 1
    failed = 0
    for p in paths:
        bad, lines = summarise(p)
        failed += bad
        print("\n".join(lines))
    for line in compare_host_times(paths) + compare_probe_host_times(paths):
        print(line)
    print(f"== {len(paths)} logs, {failed} failing" + ("" if failed else ": no wrong rows, hangs or failures"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
