#!/usr/bin/env python3
"""Bring shared/catalog/cn_prices_sourced.csv into the catalog crate's data files.

Run from the repository root:  python3 scripts/import_cn_prices.py PATH/TO/cn_prices_sourced.csv

What it does (idempotent: rows it wrote before are recognised by their source and replaced):
- hourly rows -> data/<cloud>/prices.csv (pricing `on-demand`), monthly rows ->
  data/<cloud>/subscriptions.csv (months 1), each with `source` and `as_of` exactly as the CSV
  gives them; the CSV's note and the region as written go to notes.csv.
- a region group `cn-beijing;cn-hangzhou;...` is expanded to the regions the catalog knows;
  regions it does not know are left out and listed on stdout (no zones are known for them).
  "mainland China (page default)" and "unspecified" become region `*` (the source states no
  region). `ap-guangzhou-3 (...)` is the zone of region ap-guangzhou.
- instance types the catalog lacks are added to instance_types.csv with the CSV's GPU model,
  count, vCPU and RAM (GPU memory from gpus.csv; interconnect, RDMA and network left empty
  because no source states them); rows without vCPU/RAM are not added.
- where two rows price the same (region, type, pricing), the one with the later date wins;
  undated loses to dated; on a tie the first in the CSV wins. A catalog row already present
  is kept only when it is dated later than every CSV row for that key.
- AWS rows are cross-checks only and are not imported.
"""
import csv
import io
import re
import sys
from pathlib import Path

DATA = Path("providers/catalog/data")
CLOUDS = {"Alibaba Cloud": "alibaba", "Tencent Cloud": "tencent", "Huawei Cloud": "huawei"}
GPU = {
    "A100 80GB": "A100-80GB",
    "A100 40GB": "A100-40GB",
    "A10 24GB": "A10",
    "V100 16GB": "V100-16GB",
    "V100 32GB": "V100-32GB",
    "T4 16GB": "T4",
}
MARK = "cn_prices_sourced.csv"


def date_key(as_of):
    low = as_of.lower()
    if "unknown" in low or low.startswith("undated"):
        return ""
    m = re.search(r"(?<!\d)(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?", as_of)
    if not m:
        return ""
    return "-".join(x for x in m.groups() if x)


def read(path):
    text = path.read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    header = text.splitlines()[0].split(",")
    return header, rows


def write(path, header, rows):
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=header, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: r.get(k, "") for k in header})
    path.write_text(buf.getvalue(), encoding="utf-8")


def family(cloud, name):
    if cloud == "alibaba":
        rest = name[4:] if name.startswith("ecs.") else name
        return re.split(r"[-.]", rest, maxsplit=1)[0]
    return name.split(".")[0]


def main(src):
    rows = list(csv.DictReader(open(src, encoding="utf-8")))
    gpus = {r["name"]: r for r in csv.DictReader(open(DATA / "gpus.csv", encoding="utf-8"))}
    report = []
    for cloud_name, cloud in CLOUDS.items():
        d = DATA / cloud
        regions = [r["region"] for r in csv.DictReader(open(d / "regions.csv", encoding="utf-8"))]
        th, types = read(d / "instance_types.csv")
        ah, avail = read(d / "availability.csv")
        ph, prices = read(d / "prices.csv")
        sub_path = d / "subscriptions.csv"
        if sub_path.exists():
            sh, subs = read(sub_path)
        else:
            sh = ["region", "instance_type", "months", "price", "currency", "source", "as_of", "note"]
            subs = []
        nh, notes = read(d / "notes.csv")
        ours = lambda r, col="source": MARK in r.get(col, "")
        # Forget what an earlier run of this script wrote.
        types = [t for t in types if not ours(t)]
        avail = [a for a in avail if not ours(a)]
        prices = [p for p in prices if not ours(p)]
        subs = [s for s in subs if not ours(s)]
        notes = [n for n in notes if MARK not in n["note"]]
        known_types = {t["name"] for t in types}
        offered = {}
        for a in avail:
            offered.setdefault(a["region"], set()).add(a["offer"])

        candidates = {}  # (kind, region, type) -> (date, order, row)
        for order, r in enumerate(rows):
            if r["cloud"] != cloud_name:
                continue
            it = r["instance_type"]
            written = r["region"]
            bare = re.sub(r"\s*\(.*\)$", "", written).strip()
            if bare in ("mainland China", "unspecified"):
                targets = ["*"]
            else:
                parts = [p.strip() for p in bare.split(";")]
                if cloud == "tencent":
                    parts = [re.sub(r"-\d+$", "", p) for p in parts]
                targets = [p for p in parts if p in regions]
                missing = [p for p in parts if p not in regions]
                if missing:
                    report.append(f"{cloud} {it} {r['pricing']}: regions not in the catalog, left out: {';'.join(missing)}")
            if not targets:
                continue
            if it not in known_types:
                model = GPU.get(r["gpu_model"])
                if model is None or not r["vcpus"] or not r["ram_gib"]:
                    report.append(f"{cloud} {it}: not added (GPU `{r['gpu_model']}`, vCPU `{r['vcpus']}`, RAM `{r['ram_gib']}` incomplete)")
                    continue
                types.append({
                    "name": it, "gpu_model": model, "gpu_count": r["gpu_count"],
                    "gpu_mem_gib": gpus[model]["mem_gib"], "vcpus": r["vcpus"],
                    "ram_gib": r["ram_gib"], "interconnect": "", "rdma": "", "network_gbps": "",
                    "source": f"{MARK}: {r['source']} (GPU, count, vCPU, RAM as that price list states; GPU memory from gpus.csv; interconnect/RDMA/network not stated)",
                })
                known_types.add(it)
            kind = "hourly" if r["pricing"].startswith("on-demand") else "monthly"
            for region in targets:
                if region != "*":
                    fam = family(cloud, it)
                    have = offered.setdefault(region, set())
                    if fam not in have and it not in have:
                        avail.append({
                            "region": region, "offer": it, "zones": "",
                            "source": f"{MARK}: priced in {written} by {r['source']} (a price list entry, not an availability statement)",
                        })
                        have.add(it)
                key = (kind, region, it)
                cand = (date_key(r["as_of"]), -order, r, written)
                if key not in candidates or cand[:2] > candidates[key][:2]:
                    if key in candidates:
                        report.append(f"{cloud} {it} {region} {kind}: kept {r['source'][:60]}… over an older/undated row")
                    candidates[key] = cand
        for (kind, region, it), (_, _, r, written) in sorted(candidates.items()):
            if region == "*":
                # a `*` price needs some region offering the type
                fam = family(cloud, it)
                if not any(fam in v or it in v for v in offered.values()):
                    report.append(f"{cloud} {it}: no region offers it; `*` price left out")
                    continue
            source = r["source"]
            if region == "*" or written != region:
                source += f" [region as written: {written}]"
            if kind == "hourly":
                existing = [p for p in prices if (p["region"], p["instance_type"], p["pricing"]) == (region, it, "on-demand")]
                if existing and date_key(existing[0]["as_of"]) > date_key(r["as_of"]):
                    report.append(f"{cloud} {it} {region}: kept the catalog's later on-demand price ({existing[0]['as_of']})")
                    continue
                prices = [p for p in prices if p not in existing]
                prices.append({"region": region, "instance_type": it, "pricing": "on-demand",
                               "price": r["price"], "currency": r["currency"],
                               "source": f"{MARK}: {source}", "as_of": r["as_of"]})
            else:
                existing = [s for s in subs if (s["region"], s["instance_type"], s["months"]) == (region, it, "1")]
                if existing and date_key(existing[0]["as_of"]) > date_key(r["as_of"]):
                    report.append(f"{cloud} {it} {region}: kept the catalog's later monthly price ({existing[0]['as_of']})")
                    continue
                subs = [s for s in subs if s not in existing]
                subs.append({"region": region, "instance_type": it, "months": "1",
                             "price": r["price"], "currency": r["currency"],
                             "source": f"{MARK}: {source}", "as_of": r["as_of"],
                             "note": r["notes"] + ("" if r["pricing"] == "monthly subscription" else f" (pricing as written: {r['pricing']})")})
            if r["notes"]:
                notes.append({"region": region, "instance_type": it,
                              "note": f"{r['notes']} ({MARK}, {kind})"})
        # de-duplicate notes
        seen = set()
        uniq = []
        for n in notes:
            k = (n["region"], n["instance_type"], n["note"])
            if k not in seen:
                seen.add(k)
                uniq.append(n)
        write(d / "instance_types.csv", th, types)
        write(d / "availability.csv", ah, avail)
        write(d / "prices.csv", ph, prices)
        write(sub_path, sh, subs)
        write(d / "notes.csv", nh, uniq)
    for line in report:
        print(line)


if __name__ == "__main__":
    main(sys.argv[1])
