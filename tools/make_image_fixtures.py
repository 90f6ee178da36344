#!/usr/bin/python3
"""Makes the image fixtures of tests/unit/vision: test images and Pillow's view of them.

Pillow (Debian's python3-pil, run by Debian's /usr/bin/python3) is the reference: every expected
value here comes from Pillow or from plain Python arithmetic, never from staticlm.

  /usr/bin/python3 tools/make_image_fixtures.py [OUT_DIR]     (default tests/fixtures/images)

Writes into OUT_DIR:
  *.png / *.jpg / *.gif       inputs (small; deterministic content from a seeded generator)
  expected/*.png              Pillow's Image.open(f).convert("RGB") and Image.resize(BICUBIC)
                              results, stored as lossless 8-bit RGB PNGs
  expected/*.rgb              the same as raw bytes [H, W, 3] for the simplest case
  expected/rescale.f32        float32(v) * float32(1/255) for v = 0..255 (little-endian)
  expected/*_rows.f32         selected pixel_values rows of the Gemma 4 processing
  manifest.txt                one case per line; tests/unit/vision reads it

Manifest lines (whitespace-separated):
  decode_raw FILE EXPECTED.rgb W H      decoded RGB equals the raw bytes
  decode FILE EXPECTED.png W H          decoded RGB equals the expected PNG's pixels
  resize INPUT W H EXPECTED.png         Pillow resize(BICUBIC) of INPUT's RGB to W x H
  target H W TOKENS TH TW               aspect-preserving target size (0 0: Pillow-side error)
  rows FILE TOKENS ROWS.f32 R1 R2 ...   pixel_values rows R1.. (768 f32 each) for FILE
  bad FILE KIND TEXT...                 decoding FILE fails with error kind KIND, message has TEXT
"""
import io
import math
import os
import random
import struct
import sys
import warnings
import zlib

from PIL import Image, ImageDraw, ImageFilter

warnings.simplefilter("ignore")  # Pillow warns about palette transparency; irrelevant here
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "images")
EXP = os.path.join(OUT, "expected")
os.makedirs(EXP, exist_ok=True)
manifest = []


def rng(seed):
    return random.Random(seed)


def noise_image(w, h, seed, mode="RGB"):
    r = rng(seed)
    bands = len(mode) if mode != "L" else 1
    return Image.frombytes(mode, (w, h), bytes(r.getrandbits(8) for _ in range(w * h * bands)))


def gradient_image(w, h):
    px = bytearray()
    for y in range(h):
        for x in range(w):
            px += bytes(((x * 255) // max(w - 1, 1), (y * 255) // max(h - 1, 1), ((x + y) * 7) % 256))
    return Image.frombytes("RGB", (w, h), bytes(px))


def edges_image(w, h):
    """Hard edges: a checkerboard of 5-pixel cells with saturated colours and one diagonal."""
    px = bytearray()
    for y in range(h):
        for x in range(w):
            on = ((x // 5) + (y // 5)) % 2 == 0
            c = (255, 0, 255) if on else (0, 255, 0)
            if x == y:
                c = (255, 255, 255)
            px += bytes(c)
    return Image.frombytes("RGB", (w, h), bytes(px))


def smooth_stripes(w, h):
    """Extreme aspect ratios: bands along the long axis plus a few hard edges (compresses well)."""
    px = bytearray()
    for y in range(h):
        for x in range(w):
            t = x if w >= h else y
            px += bytes(((t * 3) % 256, 255 if (t // 40) % 2 else 0, (t // 7) % 256))
    return Image.frombytes("RGB", (w, h), bytes(px))


def photo_image(w, h, seed):
    """Photo-like: smooth sky gradient, blurred shapes, fine grain."""
    img = gradient_image(w, h)
    d = ImageDraw.Draw(img)
    r = rng(seed)
    for _ in range(25):
        x0, y0 = r.randrange(w), r.randrange(h)
        x1, y1 = x0 + r.randrange(20, w // 2), y0 + r.randrange(20, h // 2)
        col = (r.randrange(256), r.randrange(256), r.randrange(256))
        (d.ellipse if r.random() < 0.5 else d.rectangle)((x0, y0, x1, y1), fill=col)
    img = img.filter(ImageFilter.GaussianBlur(2))
    grain = noise_image(w, h, seed + 1)
    return Image.blend(img, grain, 0.08)


def save(img, name, **kw):
    img.save(os.path.join(OUT, name), **kw)
    return name


def expect_decode(name):
    """Pillow's decode of NAME, stored as a lossless RGB PNG, and a manifest line."""
    im = Image.open(os.path.join(OUT, name)).convert("RGB")
    exp = "expected/" + name.replace(".", "_") + ".png"
    im.save(os.path.join(OUT, exp))
    manifest.append(f"decode {name} {exp} {im.width} {im.height}")
    return im


# ---- PNG writer for layouts Pillow cannot write (16-bit colour, 2-bit, Adam7) ----
def chunk(tag, data):
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)


def pack_row(samples, depth):
    if depth == 16:
        return b"".join(struct.pack(">H", s) for s in samples)
    if depth == 8:
        return bytes(samples)
    out, acc, nbits = bytearray(), 0, 0
    for s in samples:
        acc = (acc << depth) | s
        nbits += depth
        if nbits == 8:
            out.append(acc)
            acc, nbits = 0, 0
    if nbits:
        out.append(acc << (8 - nbits))
    return bytes(out)


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def write_png(name, w, h, depth, ctype, pixels, interlace=False, plte=None, trns=None, ihdr_wh=None, idat=None):
    """pixels[y][x] is a tuple of samples; every row uses filter type 0."""
    raw = bytearray()
    passes = ADAM7 if interlace else [(0, 0, 1, 1)]
    for x0, y0, dx, dy in passes:
        xs, ys = list(range(x0, w, dx)), list(range(y0, h, dy))
        if not xs or not ys:
            continue
        for y in ys:
            raw += b"\x00" + pack_row([s for x in xs for s in pixels[y][x]], depth)
    iw, ih = ihdr_wh if ihdr_wh else (w, h)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", iw, ih, depth, ctype, 0, 0, 1 if interlace else 0))
    if plte:
        data += chunk(b"PLTE", bytes(c for rgb in plte for c in rgb))
    if trns is not None:
        data += chunk(b"tRNS", trns)
    data += chunk(b"IDAT", idat if idat is not None else zlib.compress(bytes(raw)))
    data += chunk(b"IEND", b"")
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
    return name


def samples(w, h, seed, n, maxval):
    r = rng(seed)
    return [[tuple(r.randrange(maxval + 1) for _ in range(n)) for _ in range(w)] for _ in range(h)]


# ---------------- decode cases ----------------
rgb8 = noise_image(23, 17, 1)
save(rgb8, "png_rgb8.png")
with open(os.path.join(EXP, "png_rgb8.rgb"), "wb") as f:
    f.write(rgb8.tobytes())
manifest.append("decode_raw png_rgb8.png expected/png_rgb8.rgb 23 17")

expect_decode(save(noise_image(19, 11, 2, "L"), "png_gray8.png"))
expect_decode(save(noise_image(13, 9, 3, "L").convert("1"), "png_gray1.png"))
expect_decode(write_png("png_gray2.png", 11, 5, 2, 0, samples(11, 5, 4, 1, 3)))
expect_decode(write_png("png_gray4.png", 9, 7, 4, 0, samples(9, 7, 5, 1, 15)))
# 16-bit grey: Pillow opens it as mode "I" and convert("RGB") clamps to 0..255 (not >> 8).
g16 = samples(17, 6, 6, 1, 65535)
for x in range(17):
    g16[0][x] = (x * 20,)  # 0..320: values on both sides of 255
expect_decode(write_png("png_gray16.png", 17, 6, 16, 0, g16))
expect_decode(save(noise_image(14, 10, 7, "LA"), "png_gray_alpha8.png"))
expect_decode(write_png("png_gray_alpha16.png", 10, 6, 16, 4, samples(10, 6, 8, 2, 65535)))
expect_decode(save(noise_image(21, 13, 9, "RGBA"), "png_rgba8.png"))
expect_decode(write_png("png_rgb16.png", 12, 8, 16, 2, samples(12, 8, 10, 3, 65535)))
expect_decode(write_png("png_rgba16.png", 9, 9, 16, 6, samples(9, 9, 11, 4, 65535)))
pal = noise_image(20, 12, 12).quantize(colors=200)
expect_decode(save(pal, "png_palette8.png"))
pal4 = noise_image(15, 9, 13).quantize(colors=16)
expect_decode(save(pal4, "png_palette4.png", bits=4))
palt = noise_image(16, 8, 14).quantize(colors=64)
expect_decode(save(palt, "png_palette_trns.png", transparency=bytes(range(0, 256, 4))))
expect_decode(save(noise_image(10, 10, 15), "png_rgb_trns.png", transparency=(1, 2, 3)))
expect_decode(write_png("png_interlaced.png", 19, 13, 8, 2, samples(19, 13, 16, 3, 255), interlace=True))
expect_decode(write_png("png_interlaced_gray16.png", 7, 11, 16, 0, samples(7, 11, 17, 1, 400), interlace=True))
expect_decode(
    write_png("png_palette2.png", 13, 3, 2, 3, samples(13, 3, 18, 1, 3), plte=[(255, 0, 0), (0, 255, 0), (0, 0, 255), (9, 99, 199)])
)

jsrc = Image.blend(gradient_image(37, 29), noise_image(37, 29, 20), 0.3)
expect_decode(save(jsrc, "jpg_444.jpg", quality=90, subsampling=0))
expect_decode(save(jsrc, "jpg_422.jpg", quality=90, subsampling=1))
expect_decode(save(jsrc, "jpg_420.jpg", quality=75, subsampling=2))
expect_decode(save(jsrc, "jpg_progressive.jpg", quality=85, progressive=True))
expect_decode(save(jsrc, "jpg_optimized.jpg", quality=95, optimize=True))
expect_decode(save(jsrc.convert("L"), "jpg_gray.jpg", quality=90))
expect_decode(save(jsrc.convert("CMYK"), "jpg_cmyk.jpg", quality=90))
expect_decode(save(noise_image(1, 1, 21), "jpg_1x1.jpg", quality=90))
photo = photo_image(512, 384, 22)
save(photo, "photo.jpg", quality=90, subsampling=2)
photo_decoded = expect_decode("photo.jpg")

# ---------------- resize cases ----------------
def resize_case(img, name, sizes):
    src = name + ".png"
    img.save(os.path.join(OUT, src))
    for w, h in sizes:
        out = img.resize((w, h), Image.BICUBIC)
        exp = f"expected/{name}_{w}x{h}.png"
        out.save(os.path.join(OUT, exp))
        manifest.append(f"resize {src} {w} {h} {exp}")


resize_case(noise_image(64, 48, 30), "noise", [(32, 24), (100, 75), (17, 91), (64, 20), (7, 48), (64, 48), (48, 48)])
resize_case(gradient_image(120, 80), "gradient", [(48, 48), (333, 222), (120, 3)])
resize_case(edges_image(50, 50), "edges", [(48, 96), (13, 13), (200, 7)])
resize_case(noise_image(1, 1, 31), "tiny1x1", [(48, 48), (5, 3)])
resize_case(noise_image(3, 7, 32), "tiny3x7", [(48, 48), (2, 2), (96, 48), (1, 1)])
resize_case(noise_image(97, 61, 33), "odd97x61", [(48, 96), (61, 97), (1, 1), (96, 48)])
resize_case(smooth_stripes(10, 2000), "tall10x2000", [(48, 3360), (3, 7), (10, 500)])
resize_case(smooth_stripes(2000, 10), "wide2000x10", [(3360, 48), (500, 48)])
# The photo's input is photo.jpg itself (its decode is checked above), so no second copy is stored.
for w, h in [(432, 336), (48, 48), (1056, 576)]:
    exp = f"expected/photo_{w}x{h}.png"
    photo_decoded.resize((w, h), Image.BICUBIC).save(os.path.join(OUT, exp))
    manifest.append(f"resize photo.jpg {w} {h} {exp}")

# A larger photo (1600 x 1200, progressive): checked through decode + resize together, so only
# the small resized results are stored, not its full decode.
big = photo_image(1600, 1200, 23)
save(big, "photo_large.jpg", quality=80, subsampling=2, progressive=True)
big_decoded = Image.open(os.path.join(OUT, "photo_large.jpg")).convert("RGB")
for w, h in [(432, 336), (48, 48), (1600, 37)]:
    exp = f"expected/photo_large_{w}x{h}.png"
    big_decoded.resize((w, h), Image.BICUBIC).save(os.path.join(OUT, exp))
    manifest.append(f"resize photo_large.jpg {w} {h} {exp}")

# ---------------- Gemma 4 target sizes (HF get_aspect_ratio_preserving_size, in Python floats) ----------------
def target_size(h, w, tokens, patch=16, k=3):
    max_patches = tokens * k * k
    target_px = max_patches * patch * patch
    f = math.sqrt(target_px / (h * w))
    side = k * patch
    th = int(math.floor(f * h / side)) * side
    tw = int(math.floor(f * w / side)) * side
    if th == 0 and tw == 0:
        return 0, 0
    max_side = (max_patches // (k * k)) * side
    if th == 0:
        th, tw = side, min(int(math.floor(w / h)) * side, max_side)
    elif tw == 0:
        tw, th = side, min(int(math.floor(h / w)) * side, max_side)
    return th, tw


shapes = [(480, 640), (896, 896), (512, 512), (224, 224), (1080, 1920), (1, 1), (3, 7), (7, 3), (10, 2000),
          (2000, 10), (1, 2000), (2000, 1), (1, 100000), (97, 61), (384, 512), (3000, 4000), (4000, 3000),
          (768, 768), (672, 912), (576, 1056), (1, 47), (47, 1), (5, 700), (13, 11), (65535, 17), (100, 100000)]
for tokens in (70, 140, 280, 560, 1120):
    for h, w in shapes:
        th, tw = target_size(h, w, tokens)
        manifest.append(f"target {h} {w} {tokens} {th} {tw}")

# ---------------- rescale table and processed rows ----------------
def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


scale = f32(1 / 255)
with open(os.path.join(EXP, "rescale.f32"), "wb") as f:
    for v in range(256):
        f.write(struct.pack("<f", f32(float(v) * scale)))  # exact product of two f32, rounded once


def rows_case(name, img, tokens, rows):
    th, tw = target_size(img.height, img.width, tokens)
    if (th, tw) != (img.height, img.width):
        img = img.resize((tw, th), Image.BICUBIC)
    pw = tw // 16
    data = img.tobytes()
    out = f"expected/{name.replace('.', '_')}_t{tokens}_rows.f32"
    with open(os.path.join(OUT, out), "wb") as f:
        for r in rows:
            gy, gx = divmod(r, pw)
            for py in range(16):
                for px in range(16):
                    for c in range(3):
                        v = data[((gy * 16 + py) * tw + gx * 16 + px) * 3 + c]
                        f.write(struct.pack("<f", f32(float(v) * scale)))
    manifest.append(f"rows {name} {tokens} {out} " + " ".join(map(str, rows)))


rows_case("photo.jpg", photo_decoded, 70, [0, 1, 26, 27, 300, 566])  # 336x432: 21x27 = 567 patches
rows_case("photo.jpg", photo_decoded, 280, [0, 56, 2000, 2393])  # 672x912: 42x57 = 2394 patches

# ---------------- bad inputs ----------------
def raw(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
    return name


def jpeg_bytes(img, **kw):
    b = io.BytesIO()
    img.save(b, "JPEG", **kw)
    return b.getvalue()


def png_bytes(img):
    b = io.BytesIO()
    img.save(b, "PNG")
    return b.getvalue()


def sof_patched(data, h, w):
    i = data.find(b"\xff\xc0")
    return data[: i + 5] + struct.pack(">HH", h, w) + data[i + 9:]


good_jpg = jpeg_bytes(jsrc, quality=90)
good_png = png_bytes(noise_image(40, 30, 40))
bad = [
    (raw("bad_empty.png", b""), "invalid_file", "empty"),
    (raw("bad_garbage.jpg", bytes(rng(41).getrandbits(8) for _ in range(300))), "invalid_file", "not a JPEG or PNG"),
    (raw("bad_truncated.jpg", good_jpg[: len(good_jpg) * 6 // 10]), "invalid_file", "truncated"),
    (raw("bad_truncated_header.jpg", good_jpg[:120]), "invalid_file", "truncated"),
    (raw("bad_truncated.png", good_png[: len(good_png) * 6 // 10]), "invalid_file", "truncated"),
    (raw("bad_signature_only.png", b"\x89PNG\r\n\x1a\n"), "invalid_file", "truncated"),
    (write_png("bad_zero_width.png", 4, 4, 8, 2, samples(4, 4, 42, 3, 255), ihdr_wh=(0, 4)), "invalid_file", "zero"),
    (raw("bad_zero_height.jpg", sof_patched(good_jpg, 0, 37)), "invalid_file", "zero"),
    (write_png("bad_bomb.png", 4, 4, 8, 2, samples(4, 4, 43, 3, 255), ihdr_wh=(40000, 40000)), "out_of_range", "1600000000 pixels"),
    (raw("bad_bomb.jpg", sof_patched(good_jpg, 60000, 60000)), "out_of_range", "3600000000 pixels"),
    (raw("bad_crc.png", good_png[:45] + bytes([good_png[45] ^ 0xFF]) + good_png[46:]), "invalid_file", "invalid PNG"),
    (write_png("bad_idat.png", 4, 4, 8, 2, samples(4, 4, 44, 3, 255), idat=b"\x78\x9c\xff\xff\xff\xff"),
     "invalid_file", "invalid PNG"),
]
gif = io.BytesIO()
noise_image(8, 8, 45).convert("P").save(gif, "GIF")
bad.append((raw("bad_format.gif", gif.getvalue()), "unsupported", "GIF"))
for name, kind, text in bad:
    manifest.append(f"bad {name} {kind} {text}")

with open(os.path.join(OUT, "manifest.txt"), "w") as f:
    f.write("# made by tools/make_image_fixtures.py with Pillow " + Image.__version__ + "; do not edit\n")
    f.write("\n".join(manifest) + "\n")
print(f"wrote {len(manifest)} cases to {OUT}")
