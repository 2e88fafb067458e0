// A small PNG decoder for the browser test: enough of the format (8-bit RGB or RGBA, not interlaced,
// as Chromium writes screenshots) to count the colours of a screenshot. zlib inflates the data.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace opbench::testing {

struct Image {
  uint32_t width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;  // rows of width * channels bytes
};

inline uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

inline Image decode_png(const std::string& file) {
  const auto* d = reinterpret_cast<const uint8_t*>(file.data());
  if (file.size() < 8 || file.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) throw std::runtime_error("not a PNG");
  Image img;
  std::string idat;
  int bit_depth = 0, colour_type = 0, interlace = 0;
  for (size_t at = 8; at + 12 <= file.size();) {
    const uint32_t len = be32(d + at);
    const std::string type = file.substr(at + 4, 4);
    if (at + 12 + len > file.size()) throw std::runtime_error("truncated PNG chunk");
    const uint8_t* body = d + at + 8;
    if (type == "IHDR") {
      img.width = be32(body);
      img.height = be32(body + 4);
      bit_depth = body[8];
      colour_type = body[9];
      interlace = body[12];
    } else if (type == "IDAT") {
      idat.append(reinterpret_cast<const char*>(body), len);
    } else if (type == "IEND") {
      break;
    }
    at += 12 + len;
  }
  if (bit_depth != 8 || (colour_type != 2 && colour_type != 6) || interlace != 0)
    throw std::runtime_error("PNG format this reader does not handle");
  img.channels = colour_type == 6 ? 4 : 3;
  const size_t stride = size_t(img.width) * img.channels;
  std::vector<uint8_t> raw((stride + 1) * img.height);
  uLongf raw_size = raw.size();
  if (uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK || raw_size != raw.size())
    throw std::runtime_error("PNG data does not inflate");
  img.pixels.resize(stride * img.height);
  const size_t bpp = img.channels;
  for (size_t y = 0; y < img.height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* in = &raw[y * (stride + 1) + 1];
    uint8_t* out = &img.pixels[y * stride];
    const uint8_t* up = y ? &img.pixels[(y - 1) * stride] : nullptr;
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= bpp ? out[x - bpp] : 0, b = up ? up[x] : 0, c = (up && x >= bpp) ? up[x - bpp] : 0;
      int v = in[x];
      switch (filter) {
        case 0: break;
        case 1: v += a; break;
        case 2: v += b; break;
        case 3: v += (a + b) / 2; break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          v += (pa <= pb && pa <= pc) ? a : (pb <= pc ? b : c);
          break;
        }
        default: throw std::runtime_error("bad PNG filter");
      }
      out[x] = uint8_t(v);
    }
  }
  return img;
}

inline size_t distinct_colours(const Image& img) {
  std::set<uint32_t> colours;
  for (size_t i = 0; i + img.channels <= img.pixels.size(); i += img.channels)
    colours.insert(uint32_t(img.pixels[i]) << 16 | uint32_t(img.pixels[i + 1]) << 8 | img.pixels[i + 2]);
  return colours.size();
}

}  // namespace opbench::testing
