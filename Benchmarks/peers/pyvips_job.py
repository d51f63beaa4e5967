# The pyvips peer of `imagepipe bench --compare`: one shrink-on-load thumbnail at the largest size, copied to memory, thumbnail_image for the others, one thread per core. Usage: SOURCE_DIR DEST_DIR WORKERS SPEC... (SPEC: name:width:height:format:quality:fit).
import os, sys
from concurrent.futures import ThreadPoolExecutor
import pyvips

source, dest, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
specs = [s.split(":") for s in sys.argv[4:]]
pyvips.cache_set_max(0)

def box(w, h, spec):
    bw, bh, fit = int(spec[1]), int(spec[2]), spec[5]
    if fit == "cover":
        scale = max(bw / w, bh / h)
    else:
        scale = min(bw / w, bh / h)
    return max(1, round(w * min(1, scale))), max(1, round(h * min(1, scale)))

def save(image, path, fmt, q):
    if fmt == "jpeg":
        if image.hasalpha():
            image = image.flatten(background=[255, 255, 255])
        image.jpegsave(path, Q=q, strip=True, optimize_coding=True)
    elif fmt == "webp":
        image.webpsave(path, Q=q, strip=True)
    elif fmt == "avif":
        image.heifsave(path, Q=q, compression="av1", strip=True)
    else:
        image.pngsave(path, strip=True)

def job(relative):
    path = os.path.join(source, relative)
    stem = os.path.splitext(relative)[0]
    header = pyvips.Image.new_from_file(path)
    w, h = header.width, header.height
    if header.get_typeof("orientation") and header.get("orientation") in (5, 6, 7, 8):
        w, h = h, w
    sizes = [box(w, h, s) for s in specs]
    tw = max(x for x, _ in sizes)
    th = max(y for _, y in sizes)
    big = pyvips.Image.thumbnail(path, tw, height=th, size="down").copy_memory()
    for spec in specs:
        name, bw, bh, fmt, q, fit = spec
        if fit == "cover":
            image = big.thumbnail_image(int(bw), height=int(bh), size="down", crop="centre")
        else:
            image = big.thumbnail_image(int(bw), height=int(bh), size="down")
        ext = {"jpeg": "jpg"}.get(fmt, fmt)
        out = os.path.join(dest, f"{stem}-{name}.{ext}")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        save(image, out, fmt, int(q))

files = sorted(os.path.relpath(os.path.join(d, f), source)
               for d, _, names in os.walk(source) for f in names if not f.startswith("."))
with ThreadPoolExecutor(workers) as pool:
    for _ in pool.map(job, files):
        pass
