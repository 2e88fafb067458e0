// cuda_convert IN.cu OUT.cpp: the emulation's rewrite of one CUDA source (convert.h).
#include <fstream>
#include <iostream>
#include <sstream>

#include "convert.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: cuda_convert IN.cu OUT.cpp\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::cerr << "cuda_convert: cannot read " << argv[1] << "\n";
    return 2;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  std::string out;
  try {
    out = ob_emu_convert::convert(buf.str(), argv[1]);
  } catch (const ob_emu_convert::ConvertError& e) {
    std::cerr << argv[1] << ":" << e.line << ": error: " << e.what() << "\n";
    return 1;
  }
  // Written only when it changed, so that a rebuild of the converter does not recompile every kernel.
  std::ifstream old(argv[2], std::ios::binary);
  std::stringstream previous;
  if (old) previous << old.rdbuf();
  if (old && previous.str() == out) return 0;
  old.close();
  std::ofstream o(argv[2], std::ios::binary | std::ios::trunc);
  o << out;
  return o ? 0 : 1;
}
