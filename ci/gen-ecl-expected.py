#!/usr/bin/env python3
"""Write suites/ecl/<case>.expected.json from a Python model of each ECL
program in suites/ecl/. The model follows the ECL line by line (same
generators, same sort keys, same aggregates); run it after changing a case:

    python3 ci/gen-ecl-expected.py
"""
import json
import pathlib

OUT = pathlib.Path(__file__).resolve().parent.parent / "suites" / "ecl"


def write(case, description, results, timeout_s=None):
    doc = {"description": description}
    if timeout_s:
        doc["timeout_s"] = timeout_s
    doc["results"] = results
    (OUT / f"{case}.expected.json").write_text(json.dumps(doc, indent=2) + "\n")


def inline():
    people = [(1, "Ada", 36), (2, "Grace", 45), (3, "Alan", 41), (4, "Edsger", 72)]
    write("inline", "inline dataset written back, and its count and age sum", {
        "people": {"rows": [{"id": i, "pname": n, "age": a} for i, n, a in people]},
        "summary": {"rows": [{"n": len(people), "agesum": sum(a for _, _, a in people)}]},
    })


def sort():
    gen = [(c, (c * 7919) % 100003) for c in range(1, 100001)]
    s = sorted(gen, key=lambda r: (r[1], r[0]))
    desc = sorted(gen, key=lambda r: (-r[1], r[0]))
    row = lambda r: {"id": r[0], "k": r[1]}
    first2000 = s[:2000]
    write("sort", "global sort of 100000 generated rows, checked for order", {
        "first5": {"rows": [row(r) for r in s[:5]]},
        "last3": {"rows": [row(r) for r in desc[:3]]},
        "first2000": {"count": 2000, "sums": {
            "id": sum(r[0] for r in first2000), "k": sum(r[1] for r in first2000)}},
        "summary": {"rows": [{"n": len(s), "ksum": sum(r[1] for r in s), "out_of_order": 0}]},
    })


def join():
    orders = [(c, c % 500, (c * 37) % 1000) for c in range(1, 20001)]
    customers = {c - 1: f"c{c - 1}" for c in range(1, 401)}
    joined = [(i, cu, a, customers[cu]) for i, cu, a in orders if cu in customers]
    per = {}
    for i, cu, a, n in joined:
        cnt, tot = per.get((cu, n), (0, 0))
        per[(cu, n)] = (cnt + 1, tot + a)
    some = [{"cust": cu, "cname": n, "norders": cnt, "total": tot}
            for (cu, n), (cnt, tot) in sorted(per.items()) if cu < 4]
    first = sorted(joined)[:3]
    write("join", "inner join of 20000 orders with 400 customers, both distributed", {
        "some_customers": {"rows": some, "ordered": False},
        "first_orders": {"rows": [{"id": i, "cust": cu, "amount": a, "cname": n}
                                  for i, cu, a, n in first]},
        "summary": {"rows": [{"n": len(joined),
                              "amountsum": sum(r[2] for r in joined),
                              "idsum": sum(r[0] for r in joined)}]},
    })


def dedup():
    gen = [(c, (c * 13) % 1000) for c in range(1, 50001)]
    first = {}
    for i, v in sorted(gen, key=lambda r: (r[1], r[0])):
        first.setdefault(v, i)
    firstPerV = sorted(((i, v) for v, i in first.items()), key=lambda r: (r[1], r[0]))
    values = {v for _, v in gen}
    write("dedup", "DEDUP of 50000 generated rows to their 1000 distinct values", {
        "first4": {"rows": [{"id": i, "v": v} for i, v in firstPerV[:4]]},
        "summary": {"rows": [{"n": len(firstPerV),
                              "vsum": sum(v for _, v in firstPerV),
                              "idsum": sum(i for i, _ in firstPerV)}]},
        "hashed": {"rows": [{"n": len(values), "vsum": sum(values)}]},
    })


if __name__ == "__main__":
    inline()
    sort()
    join()
    dedup()
