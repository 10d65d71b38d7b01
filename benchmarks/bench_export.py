"""Export benchmark: txkit side by side with its baselines, in one run.

Measures, on pages served by the sandbox (same bytes for every decoder):

* decoding: the naive analyst path (``json.loads`` + ``pandas.json_normalize``), a bare
  ``polars.read_json`` with the documented types as schema (+ explode + unnest), and txkit's
  decoder (fast path with its losslessness proofs);
* the full export over loopback HTTP: naive (sequential ``httpx`` + the naive decoder) vs
  ``txkit.load_transactions``;
* 100 ms of added latency per page: txkit with one page at a time vs the default concurrency;
* a live service (issue 37): ``--status pending`` from the issue's service (20,000 records,
  two records a request leave pending, pages capped at 25), by default (the status sent,
  then applied locally when records keep moving) and with ``status_locally=True``, beside
  one unproven pass of the same export on the same service at rest; requests per record;
* reshuffled ties (issue 22): 2026-09-15..2026-10-31 of a 22,000-record ledger over
  2026-08..2026-10 (13,000-odd records) from a service capping pages at 37, with equal
  ``createdAt`` in a new order on every request, against the same export from a stable-order
  service; then both with a 429 on about every 50th request, a 503 on about every 31st, an
  exclusive ``endDate`` and days in UTC+1.

Each measurement runs in its own subprocess, with every library imported before the clock
starts; peak memory is that process's peak resident set above what it held before the
measured step (``/proc/self/clear_refs`` resets the peak).

    python benchmarks/bench_export.py                 # 200,000 records (about 5 minutes)
    python benchmarks/bench_export.py --records 20000 --repeat 1  # quick look
    python benchmarks/bench_export.py --sections export,ties      # the issue-22 rows only
    python benchmarks/bench_export.py --sections churn            # the issue-37 rows only
    python benchmarks/bench_export.py --sections export --service own --no-naive
        # E + D and txkit on a service of our own (benchmarks/own_service.py, not the sandbox)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx

from txkit.fetch.pages import DEFAULT_CONCURRENCY

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))
from _measure import reset_peak, rss_mb  # noqa: E402

# ------------------------------------------------------------------------------ decoders


def _naive(pages: list[bytes]) -> Any:
    import pandas as pd

    records: list[dict] = []
    for page in pages:
        records += json.loads(page)["data"]["transactions"]
    return pd.json_normalize(records)


def _bare_schema() -> dict:
    """The envelope with the documented types as they are (no float64 detour, no proofs)."""
    import polars as pl

    from txkit.schema import COLUMNS, EPOCH_MS_COLUMNS

    tree: dict = {}
    for name, dtype in COLUMNS.items():
        node = tree
        *parents, leaf = name.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = pl.Int64() if name in EPOCH_MS_COLUMNS else dtype

    def struct(node: dict) -> pl.Struct:
        return pl.Struct({k: struct(v) if isinstance(v, dict) else v for k, v in node.items()})

    return {
        "success": pl.Boolean(),
        "message": pl.String(),
        "data": pl.Struct({"transactions": pl.List(struct(tree)), "total": pl.Int64()}),
    }


def _bare_page(page: bytes, schema: dict) -> Any:
    import polars as pl

    env = pl.read_json(page, schema=schema)
    tx = env.select(pl.col("data").struct.field("transactions")).explode("transactions")
    frame = tx.unnest("transactions")
    while nested := [c for c, d in frame.schema.items() if isinstance(d, pl.Struct)]:
        frame = frame.unnest(nested, separator=".")
    return frame


def _bare(pages: list[bytes], threads: int = 1) -> Any:
    """Per page: read_json with the schema, explode, unnest with "." (no proofs, no sort)."""
    import polars as pl

    schema = _bare_schema()
    if threads == 1:
        frames = [_bare_page(page, schema) for page in pages]
    else:
        with ThreadPoolExecutor(threads) as pool:
            frames = list(pool.map(lambda page: _bare_page(page, schema), pages))
    return pl.concat(frames, how="diagonal_relaxed")


def _txkit(pages: list[bytes], threads: int | None = None) -> Any:
    from txkit.decode import decode_pages

    return decode_pages(pages, threads=threads)


def _with_extra_envelope_keys(page: bytes) -> bytes:
    """The same page with keys services often add: ``requestId``, ``data.page``, ``data.limit``."""
    page = page.replace(b'{"success":true,', b'{"requestId":"bench-0001","success":true,', 1)
    head, key, tail = page.rpartition(b'"total":')
    return head + b'"page":1,"limit":1000,' + key + tail


def _cores() -> int:
    return os.cpu_count() or 1


#: key -> (label, decoder). The single-threaded pair compares like with like; the all-cores
#: pair shows what txkit really does (it reads pages on every core) against the same for bare.
DECODERS = {
    "naive": ("naive (json.loads + json_normalize)", _naive),
    "bare": ("polars-bare, 1 thread", _bare),
    "txkit-1": ("txkit, 1 thread", lambda pages: _txkit(pages, threads=1)),
    "bare-all": ("polars-bare, all cores", lambda pages: _bare(pages, threads=_cores())),
    "txkit": ("txkit (default: all cores)", _txkit),
    # The same pages with extra envelope keys: must stay on the fast path (issue 11, item 6).
    "txkit-extra": ("txkit, pages with extra envelope keys (all cores)", _txkit),
}


def _frame_mb(frame: Any) -> float:
    if hasattr(frame, "estimated_size"):
        return frame.estimated_size("mb")
    return frame.memory_usage(deep=True).sum() / 2**20


def _import_libraries() -> None:
    """Import every library before the clock starts: imports are not throughput."""
    import pandas  # noqa: F401
    import polars  # noqa: F401

    import txkit
    import txkit.decode  # noqa: F401


def _run_decode(name: str, pages_file: str) -> dict:
    pages = pickle.loads(Path(pages_file).read_bytes())
    if name.endswith("-extra"):
        pages = [_with_extra_envelope_keys(page) for page in pages]
    _import_libraries()
    before = rss_mb("VmRSS")
    reset_peak()
    cpu = _cpu_seconds()
    start = time.perf_counter()
    frame = DECODERS[name][1](pages)
    cpu_used = _cpu_seconds() - cpu
    seconds = time.perf_counter() - start
    if name == "txkit":
        frame.write_parquet(pages_file + ".parquet")
    exact = None
    if name.startswith("txkit"):
        from txkit.decode import PageSink, read_page

        sink = PageSink()
        for page in pages:
            sink.add(read_page(page))
        sink.flush()
        exact = sink.exact_pages
    return {
        "exact_pages": exact,
        "cpu_s": cpu_used,
        "rows": len(frame),
        "seconds": seconds,
        "peak_mb": rss_mb("VmHWM") - before,
        "frame_mb": _frame_mb(frame),
    }


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _cpu_seconds() -> float:
    """CPU time of this process so far, every thread (user + system)."""
    times = os.times()
    return times.user + times.system


def _run_export(name: str, base_url: str, key: str, concurrency: int) -> dict:
    _import_libraries()
    before = rss_mb("VmRSS")
    reset_peak()
    cpu = _cpu_seconds()
    start = time.perf_counter()
    if name == "naive":
        # What an analyst writes: page through with one parse per page, normalize at the end.
        import pandas as pd

        records: list[dict] = []
        with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}) as c:
            skip = 0
            while True:
                r = c.get("/transaction", params={"skip": skip, "limit": 1000})
                r.raise_for_status()
                data = r.json()["data"]
                records += data["transactions"]
                skip += 1000
                if skip >= data["total"]:
                    break
        frame = pd.json_normalize(records)
        del records
    elif name == "download":
        # The machine's limit on the network side: the pages' bytes, 8 plain GETs at a time.
        with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}) as c:
            first = c.get("/transaction", params={"skip": 0, "limit": 1000})
            total = first.json()["data"]["total"]

            def get(skip: int) -> int:
                r = c.get("/transaction", params={"skip": skip, "limit": 1000})
                r.raise_for_status()
                return len(r.content)

            with ThreadPoolExecutor(concurrency) as pool:
                size = len(first.content) + sum(pool.map(get, range(1000, total, 1000)))
        seconds = time.perf_counter() - start
        return {"rows": total, "seconds": seconds, "peak_mb": 0.0, "frame_mb": size / 2**20,
                "cpu_s": _cpu_seconds() - cpu}  # fmt: skip
    elif name == "bare-export":
        # The best a bare polars client does on this machine: the same 8 plain GETs, each
        # page read by polars (with the documented types, explode, unnest) on one thread per
        # core as it arrives; no proofs, no dedupe, no sort.
        import polars as pl

        schema = _bare_schema()
        with (
            httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}) as c,
            ThreadPoolExecutor(_cores()) as readers,
        ):
            first = c.get("/transaction", params={"skip": 0, "limit": 1000})
            total = first.json()["data"]["total"]

            def get_and_read(skip: int) -> Any:
                r = c.get("/transaction", params={"skip": skip, "limit": 1000})
                r.raise_for_status()
                return readers.submit(_bare_page, r.content, schema)

            with ThreadPoolExecutor(concurrency) as pool:
                pending = [readers.submit(_bare_page, first.content, schema)]
                pending += list(pool.map(get_and_read, range(1000, total, 1000)))
            frame = pl.concat([f.result() for f in pending], how="diagonal_relaxed")
    else:
        import txkit

        stats = txkit.ExportStats()
        with txkit.Client(base_url, key, env_file=None) as client:
            frame = txkit.load_transactions(
                client,
                concurrency=concurrency,
                progress=False,
                stats=stats,
                confirm=name != "txkit-unconfirmed",
                profile=False,
            )
    seconds = time.perf_counter() - start
    out = {
        "rows": len(frame),
        "seconds": seconds,
        "cpu_s": _cpu_seconds() - cpu,
        "peak_mb": rss_mb("VmHWM") - before,
        "frame_mb": _frame_mb(frame),
    }
    if name not in ("naive", "bare-export"):
        out |= {"requests": stats.requests, "pages": stats.pages, "proofs": stats.proof_requests}
    return out


def _run_frame_rss(path: str) -> dict:
    """Resident memory of the final frame alone: read back in a fresh process."""
    import polars as pl

    before = rss_mb("VmRSS")
    frame = pl.read_parquet(path)
    return {"rss_mb": rss_mb("VmRSS") - before, "estimated_mb": frame.estimated_size("mb")}


#: jemalloc (polars' allocator) keeps freed pages for ~10 s, so a process's peak resident set
#: counts memory that is free but not yet returned. With this setting it is returned at once,
#: which shows the live peak (and makes polars about 2.5x slower: memory only, not timing).
_RETURN_AT_ONCE = {"_RJEM_MALLOC_CONF": "dirty_decay_ms:0,muzzy_decay_ms:0"}


def _child(args: list[str], env: dict[str, str] | None = None) -> dict:
    """Run one measurement in a fresh process; adds ``server_cpu_s``, this process's CPU time
    meanwhile (the sandbox serving the pages, when it runs here)."""
    before = _cpu_seconds()
    out = subprocess.run(
        [sys.executable, str(HERE), "--child", *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    return {
        **json.loads(out.stdout.strip().splitlines()[-1]),
        "server_cpu_s": _cpu_seconds() - before,
    }


def _repeated(
    runs: dict[str, list[str]], repeat: int, envs: dict[str, dict[str, str]] | None = None
) -> dict[str, dict]:
    """Run every child ``repeat`` times, round-robin (so drift hits all alike); the median.
    ``envs`` adds environment variables to some children (by key)."""
    results: dict[str, list[dict]] = {key: [] for key in runs}
    for _ in range(repeat):
        for key, args in runs.items():
            results[key].append(_child(args, (envs or {}).get(key)))
    out = {}
    for key, ms in results.items():
        seconds = sorted(m["seconds"] for m in ms)
        peaks = sorted(m["peak_mb"] for m in ms)
        cpu = {k: statistics.median(m.get(k, 0.0) for m in ms) for k in ("cpu_s", "server_cpu_s")}
        out[key] = {
            **ms[0],
            "rounds": [m["seconds"] for m in ms],  # in round order, for per-round ratios
            "seconds": statistics.median(seconds),
            "min": seconds[0],
            "max": seconds[-1],
            "peak_mb": statistics.median(peaks),
            **cpu,
        }
    return out


# ------------------------------------------------------------------------------ main


def _fetch_pages(base_url: str, key: str) -> list[bytes]:
    pages = []
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}) as c:
        skip, total = 0, 1
        while skip < total:
            r = c.get("/transaction", params={"skip": skip, "limit": 1000})
            r.raise_for_status()
            pages.append(r.content)
            total = r.json()["data"]["total"]
            skip += 1000
    return pages


_HEADER = (
    "| {first} | rows | seconds (median) | min-max | records/s | {vs} | peak MB | frame MB |\n"
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
)


def _row(label: str, m: dict, base: dict | None) -> str:
    rate = m["rows"] / m["seconds"]
    speed = f"{base['seconds'] / m['seconds']:.2f}x" if base else "1.00x"
    return (
        f"| {label} | {m['rows']:,} | {m['seconds']:.2f} | {m['min']:.2f}-{m['max']:.2f} | "
        f"{rate:,.0f} | {speed} | {m['peak_mb']:,.0f} | {m['frame_mb']:,.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--latency-records", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument("--child", nargs="*")
    parser.add_argument(
        "--baseline",
        help="a folder holding another txkit package (e.g. `git archive main txkit | tar -x "
        "-C DIR`): the export section also runs its two exports, in the same round-robin",
    )
    parser.add_argument(
        "--sections",
        default="decode,export,latency,ties,churn",
        help="comma-separated: decode, export, latency, ties, churn (default all)",
    )
    parser.add_argument(
        "--service",
        choices=("sandbox", "own"),
        default="sandbox",
        help="the export section's service: the sandbox, or benchmarks/own_service.py",
    )
    parser.add_argument(
        "--no-naive",
        action="store_true",
        help="leave the naive export out of the export section (its rows are then vs D)",
    )
    args = parser.parse_args()
    if args.child is not None:
        kind, *rest = args.child
        if kind == "decode":
            result = _run_decode(rest[0], rest[1])
        elif kind == "frame_rss":
            result = _run_frame_rss(rest[0])
        else:
            result = _run_export(rest[0], rest[1], os.environ["BENCH_KEY"], int(rest[2]))
        print(json.dumps(result))
        return

    sections = set(args.sections.split(","))
    print(f"# txkit export benchmark: {args.records:,} records ({args.service}), seed {args.seed}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
    if "decode" in sections:
        _decode_section(args)
    if "export" in sections:
        _export_section(args)
    if "latency" in sections:
        _latency_section(args)
    if "ties" in sections:
        _ties_section(args)
    if "churn" in sections:
        _churn_section(args)


def _decode_section(args: argparse.Namespace) -> None:
    from txkit.sandbox import Sandbox

    with Sandbox(seed=args.seed, records=args.records) as box:
        pages = _fetch_pages(box.base_url, box.secret_key)
        size = sum(map(len, pages))
        print(
            f"{len(pages)} pages, {size / 1e6:,.0f} MB of JSON, {size / args.records:,.0f} B/record"
        )
        with tempfile.NamedTemporaryFile(suffix=".pickle", delete=False) as f:
            f.write(pickle.dumps(pages))
        n_pages = len(pages)
        del pages
        print(f"\n## Decoding the same pages (no network; median of {args.repeat} runs)\n")
        print(_HEADER.format(first="decoder", vs="vs naive"))
        decoded = _repeated({k: ["decode", k, f.name] for k in DECODERS}, args.repeat)
        for name, m in decoded.items():
            print(_row(DECODERS[name][0], m, decoded["naive"]))
        live = {k: _child(["decode", k, f.name], _RETURN_AT_ONCE) for k in ("bare", "txkit")}
        resident = _child(["frame_rss", f.name + ".parquet"])
        os.unlink(f.name)
        os.unlink(f.name + ".parquet")
        ours = decoded["txkit"]
        ratio = ours["seconds"] / decoded["bare"]["seconds"]
        ratio_1 = decoded["txkit-1"]["seconds"] / decoded["bare"]["seconds"]
        ratio_all = ours["seconds"] / decoded["bare-all"]["seconds"]
        extra = decoded["txkit-extra"]
        print(
            f"\ntxkit decode time / bare polars: {ratio:.2f}x (default vs 1 thread), "
            f"{ratio_1:.2f}x (both on 1 thread), {ratio_all:.2f}x (both on all cores).\n"
            f"CPU time: bare polars {decoded['bare']['cpu_s']:.2f} s on 1 thread, "
            f"{decoded['bare-all']['cpu_s']:.2f} s on all cores; txkit "
            f"{decoded['txkit-1']['cpu_s']:.2f} s on 1 thread, "
            f"{ours['cpu_s']:.2f} s on all cores.\n"
            f"Extra envelope keys: {extra['seconds'] / ours['seconds']:.2f}x the time of the "
            f"same pages without them; pages on the exact path: {extra['exact_pages']} of "
            f"{n_pages} (without: {ours['exact_pages']}).\n\n"
            f"The final frame: {ours['frame_mb']:,.0f} MB by polars' estimated_size, "
            f"{resident['rss_mb']:,.0f} MB resident when read back alone. txkit's peak resident "
            f"set: {ours['peak_mb']:,.0f} MB ({ours['peak_mb'] / resident['rss_mb']:.2f}x the "
            f"resident frame); with freed memory returned at once (live peak): "
            f"{live['txkit']['peak_mb']:,.0f} MB "
            f"({live['txkit']['peak_mb'] / resident['rss_mb']:.2f}x; bare polars "
            f"{live['bare']['peak_mb']:,.0f} MB).\n"
        )


@contextlib.contextmanager
def _service(args: argparse.Namespace) -> Iterator[tuple[str, str, str]]:
    """``(base URL, key, description)`` of the service the export section reads: the sandbox,
    or ``benchmarks/own_service.py`` (``--service own``: written from the interface document
    alone, not the sandbox's code; its CPU is not in the rows' server CPU)."""
    if args.service == "sandbox":
        from txkit.sandbox import Sandbox

        with Sandbox(seed=args.seed, records=args.records) as box:
            yield box.base_url, box.secret_key, "the sandbox (server CPU in this process)"
        return
    key = "sk_bench_own_service"
    command = [sys.executable, str(HERE.parent / "own_service.py"), "--records",
               str(args.records), "--seed", str(args.seed), "--key", key]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        yield url, key, f"benchmarks/own_service.py (pid {server.pid}; server CPU not counted)"
    finally:
        server.terminate()
        server.wait()


def _export_section(args: argparse.Namespace) -> None:
    with _service(args) as (base_url, key, description):
        os.environ["BENCH_KEY"] = key
        print(f"\n## Full export over loopback HTTP (median of {args.repeat} runs, round-robin)\n")
        print(f"Service: {description}; load average before: {_load()}\n")
        print(_HEADER.format(first="path", vs="vs naive"))
        conc = str(DEFAULT_CONCURRENCY)
        runs = {
            "naive": ["export", "naive", base_url, "1"],
            "download": ["export", "download", base_url, conc],
            "bare-export": ["export", "bare-export", base_url, conc],
            "txkit": ["export", "txkit", base_url, conc],
            "txkit-unconfirmed": ["export", "txkit-unconfirmed", base_url, conc],
        }
        if args.no_naive:
            del runs["naive"]
        envs = {}
        if args.baseline:
            for name in ("txkit", "txkit-unconfirmed"):
                runs[f"base-{name}"] = runs[name]
                envs[f"base-{name}"] = {"PYTHONPATH": os.path.abspath(args.baseline)}
        exported = _repeated(runs, args.repeat, envs)
        print(f"(load average after: {_load()})\n")
        naive = exported["download" if args.no_naive else "naive"]
        ours, unconfirmed = exported["txkit"], exported["txkit-unconfirmed"]
        download = exported["download"]
        if not args.no_naive:
            print(_row("naive (sequential httpx, json.loads + json_normalize)", naive, naive))
        print(_row(f"download only ({conc} plain GETs at a time, no parsing)", download, naive))
        bare_export = exported["bare-export"]
        print(_row("bare polars export (the same GETs, each page read as it arrives)",
                   bare_export, naive))  # fmt: skip
        print(_row("txkit.load_transactions (default: set confirmed)", ours, naive))
        print(_row("txkit.load_transactions (confirm=False)", unconfirmed, naive))
        if args.baseline:
            for name, label in (("txkit", "default"), ("txkit-unconfirmed", "confirm=False")):
                base = exported[f"base-{name}"]
                print(_row(f"baseline txkit ({label}), from {args.baseline}", base, naive))
        limit = bare_export["seconds"]
        confirm_cost = ours["seconds"] - unconfirmed["seconds"]
        d, e = download["seconds"], bare_export["seconds"]
        rounds = [
            t / (a + b)
            for t, a, b in zip(
                ours["rounds"], bare_export["rounds"], download["rounds"], strict=True
            )
        ]
        print(
            "Default / (E + D) round by round (the four exports of a round run back to back, so "
            f"the machine's load drifts less within a round): "
            f"{', '.join(f'{r:.2f}x' for r in rounds)}; median **{statistics.median(rounds):.2f}x**"
        )
        print(
            f"\nRatios (issue 22): D = download {d:.2f} s, E = bare polars export {e:.2f} s. "
            f"Default export / (E + D): **{ours['seconds'] / (e + d):.2f}x** (target 1.25x); "
            f"confirm=False / E: **{unconfirmed['seconds'] / e:.2f}x** (target 1.2x); "
            f"default / E: {ours['seconds'] / e:.2f}x; E / D: {e / d:.2f}x.\n"
            f"Proofs on this clean service: requests {ours['requests']:,} for "
            f"{ours['pages']:,} pages ({ours['proofs']}); the confirming re-read costs "
            f"{ours['requests'] - unconfirmed['requests']:,} requests and {confirm_cost:+.2f} s "
            f"({confirm_cost / unconfirmed['seconds']:+.0%}); the date edges and windows cost "
            f"{sum(v for k, v in unconfirmed['proofs'].items() if k != 'confirm')} requests.\n"
            f"Requests per 1,000 records: default {1000 * ours['requests'] / ours['rows']:.2f}, "
            f"confirm=False {1000 * unconfirmed['requests'] / unconfirmed['rows']:.2f} "
            f"({ours['requests'] / unconfirmed['requests']:.2f}x one unproven pass)."
        )
        cores = _cores()
        e_d_cpu = bare_export["cpu_s"] + download["cpu_s"]

        def cpu(m: dict) -> str:
            both = m["cpu_s"] + m["server_cpu_s"]
            return (f"{m['cpu_s']:.2f} s client + {m['server_cpu_s']:.2f} s server = {both:.2f} s "
                    f"(at least {both / cores:.2f} s of wall time on {cores} cores)")  # fmt: skip

        print(
            f"\nCPU time (client and the sandbox server share the {cores} cores on loopback): "
            f"download {cpu(download)}; bare polars export {cpu(bare_export)}; txkit "
            f"{cpu(unconfirmed)} without the re-read, {cpu(ours)} with it.\n"
            f"txkit / bare polars export: {ours['seconds'] / limit:.2f}x "
            f"({unconfirmed['seconds'] / limit:.2f}x without the re-read).\n"
            # The wall ratio follows the machine's load (E suffers from it more than D); the
            # client's CPU time is the same work whatever else runs.
            f"Client CPU, default / (E + D): **{ours['cpu_s'] / e_d_cpu:.2f}x**; the re-read's "
            f"CPU: {ours['cpu_s'] - unconfirmed['cpu_s']:+.2f} s (D's: {download['cpu_s']:.2f} s)."
        )
        if args.baseline:
            base, base_unconfirmed = exported["base-txkit"], exported["base-txkit-unconfirmed"]
            print(
                f"\nBaseline ({args.baseline}), same run: default / (E + D) "
                f"**{base['seconds'] / (e + d):.2f}x**, confirm=False / E "
                f"**{base_unconfirmed['seconds'] / e:.2f}x**; CPU {cpu(base_unconfirmed)} "
                f"without the re-read, {cpu(base)} with it; client CPU, default / (E + D): "
                f"**{base['cpu_s'] / e_d_cpu:.2f}x**."
            )


def _latency_section(args: argparse.Namespace) -> None:
    from txkit.sandbox import Sandbox

    print(
        f"\n## 100 ms added latency per page ({args.latency_records:,} records; "
        f"median of {args.repeat} runs)\n"
    )
    print(_HEADER.format(first="concurrency", vs="vs 1"))
    with Sandbox(seed=args.seed, records=args.latency_records, faults="latency=100") as box:
        os.environ["BENCH_KEY"] = box.secret_key
        latency = _repeated(
            {
                "one": ["export", "txkit", box.base_url, "1"],
                "default": ["export", "txkit", box.base_url, str(DEFAULT_CONCURRENCY)],
            },
            args.repeat,
        )
        print(_row("1 (one page at a time)", latency["one"], latency["one"]))
        print(_row(f"{DEFAULT_CONCURRENCY} (default)", latency["default"], latency["one"]))


#: The services of the ties rows: stable and reshuffled ties, each with and without faults.
_TIE_FAULTS = ",rate_limit=0.02,server_error=0.032,bounds=end_exclusive,date_shift=1"
_TIE_SERVICES = {
    "stable order, cap 37": "cap=37",
    "ties reshuffled, cap 37": "cap=37,shuffle_ties",
    "stable, cap 37, 429/503 faults": "cap=37" + _TIE_FAULTS,
    "reshuffled, cap 37, 429/503 faults": "cap=37,shuffle_ties" + _TIE_FAULTS,
}


def _ties_section(args: argparse.Namespace) -> None:
    """Reshuffled ties vs a stable order: requests and time of the default export."""
    import txkit
    from txkit.sandbox import Sandbox

    print(
        f"\n## Reshuffled ties (22,000-record ledger over 2026-08..2026-10, exported "
        f"2026-09-15..2026-10-31, pages capped at 37; median of {args.repeat} runs)\n"
    )
    print("| service | rows | exact | requests | retries | tie requests | seconds (median) |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
    seen: dict[str, tuple[int, float]] = {}
    runs: dict[str, list[tuple[float, Any, Any]]] = {label: [] for label in _TIE_SERVICES}
    with Sandbox(seed=args.seed, records=22_000, start_month="2026-08", months=3) as box:
        for _ in range(args.repeat):
            for label, spec in _TIE_SERVICES.items():  # round-robin: drift hits all alike
                box.faults = spec
                box.reset()
                stats = txkit.ExportStats()
                began = time.perf_counter()
                with txkit.Client(box.base_url, box.secret_key, env_file=None) as client:
                    frame = txkit.load_transactions(
                        client, start="2026-09-15", end="2026-10-31", stats=stats,
                        progress=False, profile=False,
                    )  # fmt: skip
                runs[label].append((time.perf_counter() - began, stats, frame))
        box.faults = None
        expected = _expected_ids(box, "2026-09-15", "2026-10-31")
        for label, measured in runs.items():
            seconds = statistics.median(r[0] for r in measured)
            stats = measured[0][1]
            exact = all(r[2]["id"].to_list() == expected for r in measured)
            seen[label] = (stats.requests, seconds)
            print(
                f"| {label} | {measured[0][2].height:,} | {'yes' if exact else '**no**'} | "
                f"{stats.requests:,} | {stats.retries:,} | "
                f"{stats.proof_requests.get('ties', 0):,} | {seconds:.2f} |"
            )
    for plain, faulty in ((0, 1), (2, 3)):
        (r0, s0), (r1, s1) = seen[list(seen)[plain]], seen[list(seen)[faulty]]
        print(
            f"\n{list(seen)[faulty]} / {list(seen)[plain]}: requests {r1 / r0:.2f}x "
            f"(target 1.2x), time {s1 / s0:.2f}x (target 1.5x)"
        )


def _churn_section(args: argparse.Namespace) -> None:
    """The issue-37 service: pending records settling while ``--status pending`` runs."""
    import txkit
    from txkit.sandbox import Sandbox

    print(
        "\n## A live service (20,000 records, `--status pending --start 2026-10-25 --end "
        "2026-10-31`, the last week, where records are in flight; pages capped at 25, two "
        f"records a request leave pending; median of {args.repeat})\n"
    )
    print("| export | rows | requests | x one unproven pass | seconds |")
    print("| --- | ---: | ---: | ---: | ---: |")
    cases = {
        "one unproven pass, service at rest (confirm=False)": ("cap=25", {"confirm": False}),
        "default, service at rest": ("cap=25", {}),
        "default, churn (status sent, then applied locally)": ("cap=25,settle=2", {}),
        "status_locally=True, churn": ("cap=25,settle=2", {"status_locally": True}),
    }
    runs: dict[str, list[tuple[float, Any, int]]] = {label: [] for label in cases}
    with Sandbox(seed=7, records=20_000) as box:
        for _ in range(args.repeat):
            for label, (spec, kw) in cases.items():
                box.faults = spec
                box.reset()
                stats = txkit.ExportStats()
                began = time.perf_counter()
                with txkit.Client(box.base_url, box.secret_key, env_file=None) as client:
                    frame = txkit.load_transactions(
                        client, status="pending", start="2026-10-25", end="2026-10-31",
                        stats=stats, progress=False, profile=False, **kw,
                    )  # fmt: skip
                runs[label].append((time.perf_counter() - began, stats, frame.height))
    base = runs[next(iter(cases))][0][1].requests
    for label, measured in runs.items():
        seconds = statistics.median(r[0] for r in measured)
        requests = statistics.median(r[1].requests for r in measured)
        local = sum("applied locally" in r[1].summary() for r in measured)
        print(
            f"| {label}{f' ({local} of {len(measured)} applied locally)' if local else ''} | "
            f"{measured[0][2]:,} | {requests:,.0f} | {requests / base:.2f}x | {seconds:.2f} |"
        )


def _expected_ids(box: Any, first: str, last: str) -> list[str]:
    """Brute force over what the sandbox serves: ids created in [first, last], sorted like
    the loader sorts (``createdAt``, then ``id``)."""
    end = (date.fromisoformat(last) + timedelta(days=1)).isoformat()
    rows = [
        (r["createdAt"], r["id"])
        for r in box.served_records()
        if first <= r["createdAt"][:10] and r["createdAt"] < end
    ]
    return [rid for _, rid in sorted(rows)]


if __name__ == "__main__":
    main()
