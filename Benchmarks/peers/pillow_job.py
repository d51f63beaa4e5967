# The Pillow peer of `imagepipe bench --compare`: draft-mode decode in a process pool. Usage: SOURCE_DIR DEST_DIR WORKERS SPEC... (SPEC: name:width:height:format:quality:fit).
import multiprocessing, os, sys
from concurrent.futures import ProcessPoolExecutor
from PIL import Image, ImageOps

source, dest, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
specs = [s.split(":") for s in sys.argv[4:]]

def job(relative):
    path = os.path.join(source, relative)
    stem = os.path.splitext(relative)[0]
    with Image.open(path) as original:
        largest = max(max(int(s[1]), int(s[2])) for s in specs)
        original.draft("RGB", (largest, largest))
        image = ImageOps.exif_transpose(original).convert("RGB")
    for name, bw, bh, fmt, q, fit in specs:
        bw, bh, q = int(bw), int(bh), int(q)
        if fit == "cover":
            scale = max(bw / image.width, bh / image.height)
            if scale > 1:
                shrink = min(image.width / bw, image.height / bh)
                bw, bh = max(1, round(bw * shrink)), max(1, round(bh * shrink))
            variant = ImageOps.fit(image, (bw, bh), Image.LANCZOS)
        else:
            variant = image.copy()
            variant.thumbnail((bw, bh), Image.LANCZOS)
        ext = {"jpeg": "jpg"}.get(fmt, fmt)
        out = os.path.join(dest, f"{stem}-{name}.{ext}")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        if fmt == "jpeg":
            variant.save(out, "JPEG", quality=q, optimize=True)
        elif fmt == "webp":
            variant.save(out, "WEBP", quality=q)
        else:
            variant.save(out, "PNG")

if __name__ == "__main__":
    files = sorted(os.path.relpath(os.path.join(d, f), source)
                   for d, _, names in os.walk(source) for f in names if not f.startswith("."))
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        for _ in pool.map(job, files):
            pass
