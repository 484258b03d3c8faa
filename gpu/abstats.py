"""The statistics of the in-process A/Bs, shared by gpu/pytorch/ab.py and gpu/dlsym/*_ab.py.

Pure Python, standard library only: the parents that analyse the children's blocks import it, and
so can any program without torch or jax. docs/ab-method.md says why the interval is a percentile
bootstrap of the mean paired gain and why the percentages are taken over the mean off time.
"""
import math
import random
import statistics


def percentile(sorted_values, fraction):
    """Linear interpolation between the closest ranks (numpy's default)."""
    position = fraction * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def bootstrap_mean_ci(values, resamples=10_000, seed=0, level=0.95):
    """Percentile bootstrap interval of the mean of values: resample with replacement, same size."""
    if not values:
        return None
    rng = random.Random(seed)  # a str seed is hashed with SHA-512: the same interval every run
    n = len(values)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(resamples))
    tail = (1 - level) / 2
    return percentile(means, tail), percentile(means, 1 - tail)


def paired_summary(off, on, resamples, seed):
    """What the table says of one condition and metric, from the paired per-iteration times (ns).

    Gain = off - on per pair (positive: faster with the feature). Returns the medians, the mean gain,
    its bootstrap interval (seed fixes it), whether the interval excludes zero, and the mean gain and
    the interval in percent of the mean off time. Empty lists give an empty dict."""
    if not off:
        return {}
    gains = [a - b for a, b in zip(off, on)]
    mean_off = statistics.fmean(off)
    mean_gain = statistics.fmean(gains)
    low, high = bootstrap_mean_ci(gains, resamples, seed=seed)
    return {"off_median_ns": statistics.median(off), "on_median_ns": statistics.median(on),
            "gain_median_ns": statistics.median(gains), "gain_mean_ns": mean_gain,
            "ci_low_ns": low, "ci_high_ns": high, "ci_excludes_zero": low > 0 or high < 0,
            # Mean gain over mean off time: the share of the off blocks' time the feature saved.
            "gain_percent": 100 * mean_gain / mean_off,
            "ci_low_percent": 100 * low / mean_off, "ci_high_percent": 100 * high / mean_off}


def judge_target(row, target):
    """Marks a row with its target: at least `target` percent of the off time saved, the interval of
    the gain above zero."""
    row["target_percent"] = target
    row["target_passed"] = "gain_percent" in row and row["gain_percent"] >= target and row["ci_low_ns"] > 0


def us(ns, digits=1):
    """Nanoseconds as microseconds, for the tables."""
    return f"{ns / 1000:.{digits}f}"


def table_lines(rows, unit, missed="FAIL"):
    """The A/B table in markdown: header and one line per analysed row (a dict as the parents make
    them); `unit` names what a time is per ("iter", "call"), `missed` what a missed target says."""
    lines = [f"| workload | features on | metric | pairs | off, median µs/{unit} | gain, median µs | "
             "gain, mean µs [95% CI] | gain % of off [95% CI] | CI excludes 0 | target |",
             "| --- | --- | --- | ---: | ---: | ---: | --- | --- | --- | --- |"]
    for row in rows:
        if "gain_mean_ns" not in row:
            lines.append(f"| {row['workload']} | {row['condition']} | {row['metric']} | 0 | no data | | | | | |")
            continue
        target = ""
        if "target_percent" in row:
            target = f">= {row['target_percent']:g}%, CI > 0: {'PASS' if row['target_passed'] else missed}"
            if row.get("rounds_disagree"):  # generate_ab.py's steady rounds: the interval cleared, a round lost
                target += " (a round lost)"
        if "floor_percent" in row:
            target = f"CI low >= {row['floor_percent']:g}%: {'PASS' if row['floor_passed'] else missed}"
        flagged = f" ({row['features_not_as_asked']} pairs not as asked)" if row["features_not_as_asked"] else ""
        lines.append(
            f"| {row['workload']} | {row['condition']}{flagged} | {row['metric']} | {row['pairs']} | "
            f"{us(row['off_median_ns'])} | {us(row['gain_median_ns'], 2)} | "
            f"{us(row['gain_mean_ns'], 2)} [{us(row['ci_low_ns'], 2)}, {us(row['ci_high_ns'], 2)}] | "
            f"{row['gain_percent']:.2f} [{row['ci_low_percent']:.2f}, {row['ci_high_percent']:.2f}] | "
            f"{'yes' if row['ci_excludes_zero'] else 'no'} | {target} |")
    return lines
