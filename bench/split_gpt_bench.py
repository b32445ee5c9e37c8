# Splits a prepared bench directory (bench/gpt_step_bench.py prepare DIR) into
# DIR_a / DIR_b / DIR_c, one budget each (the 64 MiB carry and 600 s device call
# limits): the shared files (weft-run, its libraries, the small package) in each.
import json, os, shutil, sys
src = sys.argv[1]
m = json.load(open(os.path.join(src, "manifest.json")))
for part, fractions in (("a", (1.0,)), ("b", (0.5,)), ("c", (0.3,))):
    dst = src + "_" + part
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    keep = set()
    mm = json.loads(json.dumps(m))
    for b in mm["budgets"]:
        for pk in b["packages"]:
            if b["fraction"] in fractions:
                if pk["package"]:
                    keep.add(pk["package"])
                    keep.add(pk["package"].replace(".weftpkg", "_report.json"))
            elif pk["package"]:
                pk["not_carried"] = "measured in another device call (64 MiB carry and 600 s limits)"
    for f in os.listdir(src):
        if f.endswith(".weftpkg") and f not in keep and f != "small.weftpkg":
            continue
        if f == "manifest.json":
            continue
        os.link(os.path.join(src, f), os.path.join(dst, f))
    json.dump(mm, open(os.path.join(dst, "manifest.json"), "w"), indent=1)
    size = sum(os.path.getsize(os.path.join(dst, f)) for f in os.listdir(dst))
    print(dst, f"{size / 2**20:.1f} MiB", sorted(f for f in os.listdir(dst) if f.endswith(".weftpkg")))
