"""Export benchmark: txkit side by side with its baselines, in one run.

Measures, on pages served by the sandbox (same bytes for every decoder):

* decoding: the naive analyst path (``json.loads`` + ``pandas.json_normalize``), a bare
  ``polars.read_json`` with the documented types as schema (+ explode + unnest), and txkit's
  decoder (fast path with its losslessness proofs);
* the full export over loopback HTTP: naive (sequential ``httpx`` + the naive decoder) vs
  ``txkit.load_transactions``;
* 100 ms of added latency per page: txkit with one page at a time vs the default concurrency.

Each measurement runs in its own subprocess, with every library imported before the clock
starts; peak memory is that process's peak resident set above what it held before the
measured step (``/proc/self/clear_refs`` resets the peak).

    python benchmarks/bench_export.py                 # 200,000 records (about 2 minutes)
    python benchmarks/bench_export.py --records 20000 # quick look
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from txkit.pages import DEFAULT_CONCURRENCY

HERE = Path(__file__).resolve()


# ------------------------------------------------------------------------------ memory helpers


def _rss_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> None:
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


# ------------------------------------------------------------------------------ decoders


def _naive(pages: list[bytes]) -> Any:
    import pandas as pd

    frames = [pd.json_normalize(json.loads(p)["data"]["transactions"]) for p in pages]
    return pd.concat(frames, ignore_index=True)


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


def _bare(pages: list[bytes]) -> Any:
    import polars as pl

    schema = _bare_schema()
    frames = []
    for page in pages:
        env = pl.read_json(io.BytesIO(page), schema=schema)
        tx = env.select(pl.col("data").struct.field("transactions")).explode("transactions")
        frame = tx.unnest("transactions")
        while nested := [c for c, d in frame.schema.items() if isinstance(d, pl.Struct)]:
            frame = frame.unnest(nested, separator=".")
        frames.append(frame)
    return pl.concat(frames, how="diagonal_relaxed")


def _txkit(pages: list[bytes]) -> Any:
    from txkit.frame import assemble, build_frames, read_page

    frames = []
    batch = []
    for page in pages:
        batch.append(read_page(page))
        if len(batch) == 32:
            frames += build_frames(batch)
            batch = []
    frames += build_frames(batch)
    return assemble(frames)


DECODERS = {"naive": _naive, "polars-bare": _bare, "txkit": _txkit}


def _frame_mb(frame: Any) -> float:
    if hasattr(frame, "estimated_size"):
        return frame.estimated_size("mb")
    return frame.memory_usage(deep=True).sum() / 2**20


def _import_libraries() -> None:
    """Import every library before the clock starts: imports are not throughput."""
    import pandas  # noqa: F401
    import polars  # noqa: F401

    import txkit
    import txkit.frame  # noqa: F401


def _run_decode(name: str, pages_file: str) -> dict:
    pages = pickle.loads(Path(pages_file).read_bytes())
    _import_libraries()
    before = _rss_mb("VmRSS")
    _reset_peak()
    start = time.perf_counter()
    frame = DECODERS[name](pages)
    seconds = time.perf_counter() - start
    if name == "txkit":
        frame.write_parquet(pages_file + ".parquet")
    return {
        "rows": len(frame),
        "seconds": seconds,
        "peak_mb": _rss_mb("VmHWM") - before,
        "frame_mb": _frame_mb(frame),
    }


def _run_export(name: str, base_url: str, key: str, concurrency: int) -> dict:
    _import_libraries()
    before = _rss_mb("VmRSS")
    _reset_peak()
    start = time.perf_counter()
    if name == "naive":
        pages = []
        with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}) as c:
            skip = 0
            while True:
                r = c.get("/transaction", params={"skip": skip, "limit": 1000})
                r.raise_for_status()
                pages.append(r.content)
                total = r.json()["data"]["total"]
                skip += 1000
                if skip >= total:
                    break
        frame = _naive(pages)
    else:
        import txkit

        with txkit.Client(base_url, key, env_file=None) as client:
            frame = txkit.load_transactions(client, concurrency=concurrency, progress=False)
    seconds = time.perf_counter() - start
    return {
        "rows": len(frame),
        "seconds": seconds,
        "peak_mb": _rss_mb("VmHWM") - before,
        "frame_mb": _frame_mb(frame),
    }


def _run_frame_rss(path: str) -> dict:
    """Resident memory of the final frame alone: read back in a fresh process."""
    import polars as pl

    before = _rss_mb("VmRSS")
    frame = pl.read_parquet(path)
    return {"rss_mb": _rss_mb("VmRSS") - before, "estimated_mb": frame.estimated_size("mb")}


def _child(args: list[str]) -> dict:
    out = subprocess.run(
        [sys.executable, str(HERE), "--child", *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


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


def _row(label: str, m: dict, base: dict | None) -> str:
    rate = m["rows"] / m["seconds"]
    speed = f"{base['seconds'] / m['seconds']:.2f}x" if base else "1.00x"
    return (
        f"| {label} | {m['rows']:,} | {m['seconds']:.2f} | {rate:,.0f} | {speed} | "
        f"{m['peak_mb']:,.0f} | {m['frame_mb']:,.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--latency-records", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--child", nargs="*")
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

    from txkit.sandbox import Sandbox

    print(f"# txkit export benchmark: {args.records:,} sandbox records, seed {args.seed}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
    with Sandbox(seed=args.seed, records=args.records) as box:
        pages = _fetch_pages(box.base_url, box.secret_key)
        size = sum(map(len, pages))
        print(
            f"{len(pages)} pages, {size / 1e6:,.0f} MB of JSON, {size / args.records:,.0f} B/record"
        )
        with tempfile.NamedTemporaryFile(suffix=".pickle", delete=False) as f:
            f.write(pickle.dumps(pages))
        del pages
        print("\n## Decoding the same pages (no network)\n")
        print("| decoder | rows | seconds | records/s | vs naive | peak MB | frame MB |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        decoded = {name: _child(["decode", name, f.name]) for name in DECODERS}
        for name, m in decoded.items():
            print(_row(name, m, decoded["naive"]))
        resident = _child(["frame_rss", f.name + ".parquet"])
        os.unlink(f.name)
        os.unlink(f.name + ".parquet")
        ours = decoded["txkit"]
        ratio = ours["seconds"] / decoded["polars-bare"]["seconds"]
        print(
            f"\ntxkit decode time / bare polars: {ratio:.2f}x. The final frame: "
            f"{ours['frame_mb']:,.0f} MB by polars' estimated_size, {resident['rss_mb']:,.0f} MB "
            f"resident when read back alone; txkit peak / frame: "
            f"{ours['peak_mb'] / ours['frame_mb']:.2f}x (estimate), "
            f"{ours['peak_mb'] / resident['rss_mb']:.2f}x (resident).\n"
        )

        os.environ["BENCH_KEY"] = box.secret_key
        print("\n## Full export over loopback HTTP\n")
        print("| path | rows | seconds | records/s | vs naive | peak MB | frame MB |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        naive = _child(["export", "naive", box.base_url, "1"])
        print(_row("naive (sequential httpx + json_normalize)", naive, naive))
        ours = _child(["export", "txkit", box.base_url, str(DEFAULT_CONCURRENCY)])
        print(_row("txkit.load_transactions (default)", ours, naive))

    print(f"\n## 100 ms added latency per page ({args.latency_records:,} records)\n")
    print("| concurrency | rows | seconds | records/s | vs 1 | peak MB | frame MB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    with Sandbox(seed=args.seed, records=args.latency_records, faults="latency=100") as box:
        os.environ["BENCH_KEY"] = box.secret_key
        one = _child(["export", "txkit", box.base_url, "1"])
        print(_row("1 (one page at a time)", one, one))
        default = _child(["export", "txkit", box.base_url, str(DEFAULT_CONCURRENCY)])
        print(_row(f"{DEFAULT_CONCURRENCY} (default)", default, one))


if __name__ == "__main__":
    main()
