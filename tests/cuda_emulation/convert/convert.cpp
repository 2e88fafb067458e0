#include "convert.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace ob_emu_convert {
namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The source with, per character, whether it is code (not a comment, string or character literal)
// and whether it lies on a preprocessor directive line.
class Source {
 public:
  explicit Source(std::string_view text) : s_(text), code_(text.size(), true), pp_(text.size(), false) { classify(); }

  size_t size() const { return s_.size(); }
  char at(size_t i) const { return i < s_.size() ? s_[i] : '\0'; }
  bool code(size_t i) const { return i < s_.size() && code_[i]; }
  bool pp(size_t i) const { return i < s_.size() && pp_[i]; }
  std::string_view text(size_t b, size_t e) const { return s_.substr(b, e - b); }
  int line_of(size_t i) const { return 1 + int(std::count(s_.begin(), s_.begin() + long(std::min(i, s_.size())), '\n')); }

  bool starts(size_t i, std::string_view what) const { return code(i) && s_.substr(i, what.size()) == what; }
  // An identifier starting at i (a whole word of code), or empty.
  std::string_view word_at(size_t i) const {
    if (!code(i) || !(std::isalpha(static_cast<unsigned char>(s_[i])) || s_[i] == '_') || (i > 0 && ident_char(s_[i - 1]) && code(i - 1)))
      return {};
    size_t e = i;
    while (e < s_.size() && ident_char(s_[e])) ++e;
    return s_.substr(i, e - i);
  }
  // The next code character at or after i that is not white space (size() if none).
  size_t skip_space(size_t i) const {
    while (i < s_.size() && (!code_[i] || std::isspace(static_cast<unsigned char>(s_[i])))) ++i;
    return i;
  }
  // The last code character before i that is not white space (npos if none).
  size_t skip_space_back(size_t i) const {
    while (i > 0) {
      --i;
      if (code_[i] && !std::isspace(static_cast<unsigned char>(s_[i]))) return i;
    }
    return std::string_view::npos;
  }
  // `open` at i: the position of its matching closer, counting (), [] and {} in code only.
  size_t match_forward(size_t i) const {
    int depth = 0;
    for (size_t j = i; j < s_.size(); ++j) {
      if (!code_[j]) continue;
      const char c = s_[j];
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}')
        if (--depth == 0) return j;
    }
    throw ConvertError(line_of(i), std::string("no closing bracket for this '") + s_[i] + "'");
  }
  // `close` at i: the position of its matching opener.
  size_t match_back(size_t i, char open, char close) const {
    int depth = 0;
    for (size_t j = i + 1; j-- > 0;) {
      if (!code_[j]) continue;
      if (s_[j] == close) ++depth;
      if (s_[j] == open && --depth == 0) return j;
      if (open == '<' && s_[j] == ')') j = match_back(j, '(', ')');  // (N > 2) inside template arguments
    }
    throw ConvertError(line_of(i), std::string("no opening '") + open + "' for this '" + close + "'");
  }

 private:
  void classify() {
    const size_t n = s_.size();
    bool line_start = true, in_pp = false;
    for (size_t i = 0; i < n;) {
      const char c = s_[i];
      if (c == '\n') {
        if (!(in_pp && i > 0 && s_[i - 1] == '\\')) in_pp = false;
        line_start = true;
        pp_[i] = in_pp;
        ++i;
        continue;
      }
      if (line_start && c == '#') in_pp = true;
      if (!std::isspace(static_cast<unsigned char>(c))) line_start = false;
      pp_[i] = in_pp;
      if (c == '/' && i + 1 < n && s_[i + 1] == '/') {
        while (i < n && s_[i] != '\n') code_[i] = false, pp_[i] = in_pp, ++i;
        continue;
      }
      if (c == '/' && i + 1 < n && s_[i + 1] == '*') {
        const size_t e = s_.find("*/", i + 2);
        const size_t end = e == std::string_view::npos ? n : e + 2;
        for (; i < end; ++i) code_[i] = false, pp_[i] = in_pp && s_[i] != '\n' ? true : pp_[i];
        continue;
      }
      if (c == 'R' && i + 1 < n && s_[i + 1] == '"' && (i == 0 || !ident_char(s_[i - 1]) || (s_[i - 1] == 'u' || s_[i - 1] == 'L' || s_[i - 1] == '8'))) {
        const size_t paren = s_.find('(', i + 2);
        if (paren != std::string_view::npos) {
          const std::string close = ")" + std::string(s_.substr(i + 2, paren - i - 2)) + "\"";
          const size_t e = s_.find(close, paren);
          const size_t end = e == std::string_view::npos ? n : e + close.size();
          for (; i < end; ++i) code_[i] = false;
          continue;
        }
      }
      if (c == '"' || (c == '\'' && !(i > 0 && std::isxdigit(static_cast<unsigned char>(s_[i - 1])) && i + 1 < n &&
                                     std::isxdigit(static_cast<unsigned char>(s_[i + 1])) && number_before(i)))) {
        code_[i++] = false;
        while (i < n && s_[i] != c && s_[i] != '\n') {
          if (s_[i] == '\\') code_[i++] = false;
          if (i < n) code_[i++] = false;
        }
        if (i < n && s_[i] == c) code_[i++] = false;
        continue;
      }
      ++i;
    }
  }
  // Whether the ' at i is a digit separator (1'000'000): it follows a number token.
  bool number_before(size_t i) const {
    size_t j = i;
    while (j > 0 && (ident_char(s_[j - 1]) || s_[j - 1] == '\'')) --j;
    return std::isdigit(static_cast<unsigned char>(s_[j]));
  }

  std::string_view s_;
  std::vector<bool> code_, pp_;
};

struct Edit {
  size_t begin, end;  // replaced range [begin, end); begin == end inserts
  std::string text;
};

// The line breaks of a replaced stretch, kept so that later lines keep their numbers (escaped on a
// preprocessor line, where a bare one would end the directive).
std::string newlines_in(std::string_view s, bool pp = false) {
  std::string out;
  for (char c : s)
    if (c == '\n') out += pp ? " \\\n" : "\n";
  return out;
}

std::string squeeze(std::string_view s) {  // the kernel expression as one line, for its name
  std::string out;
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// `<<<` at i: the whole launch expression as one edit.
Edit launch_edit(const Source& src, size_t i) {
  // The kernel expression before <<<: a parenthesised expression, or [::]name[::name...][<args>].
  size_t end = src.skip_space_back(i);
  if (end == std::string_view::npos) throw ConvertError(src.line_of(i), "'<<<' with no kernel before it");
  size_t begin = end;
  if (src.at(end) == ')') {
    begin = src.match_back(end, '(', ')');
  } else {
    if (src.at(end) == '>') {
      begin = src.match_back(end, '<', '>');
      const size_t before = src.skip_space_back(begin);
      if (before == std::string_view::npos) throw ConvertError(src.line_of(i), "'<<<' after template arguments with no kernel name");
      begin = before + 1;
    }
    size_t j = begin == end ? end + 1 : begin;
    while (j > 0 && src.code(j - 1) && (ident_char(src.at(j - 1)) || src.at(j - 1) == ':')) --j;
    if (j == (begin == end ? end + 1 : begin) || std::isdigit(static_cast<unsigned char>(src.at(j))))
      throw ConvertError(src.line_of(i), "cannot find the kernel's name before '<<<'");
    begin = j;
  }
  // The configuration, up to >>> outside any brackets.
  int depth = 0;
  size_t close = std::string_view::npos;
  for (size_t j = i + 3; j < src.size(); ++j) {
    if (!src.code(j)) continue;
    const char c = src.at(j);
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ';' && depth <= 0) break;
    if (depth == 0 && src.starts(j, ">>>")) {
      close = j;
      break;
    }
  }
  if (close == std::string_view::npos) throw ConvertError(src.line_of(i), "'<<<' without its '>>>'");
  const std::string config = trim(src.text(i + 3, close));
  if (config.empty()) throw ConvertError(src.line_of(i), "empty launch configuration");
  const size_t paren = src.skip_space(close + 3);
  if (src.at(paren) != '(') throw ConvertError(src.line_of(close), "'>>>' not followed by the kernel's argument list");
  const size_t paren_end = src.match_forward(paren);
  const std::string_view kernel = src.text(begin, end + 1);
  const std::string args(src.text(paren + 1, paren_end));
  Edit e{begin, paren_end + 1, ""};
  const bool pp = src.pp(i);
  e.text = "::ob_emu::launch(" + std::string(kernel) + ", \"" + squeeze(kernel) + "\"," + newlines_in(src.text(end + 1, i), pp) +
           " ::ob_emu::config(" + std::string(src.text(i + 3, close)) + ")" + newlines_in(src.text(close + 3, paren), pp) +
           (trim(args).empty() ? newlines_in(args, pp) : ", " + args) + ")";
  return e;
}

// The end of a declaration starting at i: its ';' outside brackets.
size_t declaration_end(const Source& src, size_t i) {
  for (size_t j = i; j < src.size(); ++j) {
    if (!src.code(j)) continue;
    const char c = src.at(j);
    if (c == '(' || c == '[' || c == '{') j = src.match_forward(j);
    else if (c == ';') return j;
  }
  throw ConvertError(src.line_of(i), "declaration without its ';'");
}

// Removes __align__(...) / __attribute__((...)) from a declaration's text (extern __shared__'s type).
std::string without_attributes(std::string_view t) {
  std::string out;
  for (size_t i = 0; i < t.size();) {
    bool attr = false;
    for (std::string_view a : {std::string_view("__align__"), std::string_view("__attribute__"), std::string_view("alignas")})
      if (t.substr(i, a.size()) == a && (i == 0 || !ident_char(t[i - 1])) && (i + a.size() >= t.size() || !ident_char(t[i + a.size()]))) {
        size_t j = i + a.size();
        while (j < t.size() && std::isspace(static_cast<unsigned char>(t[j]))) ++j;
        if (j < t.size() && t[j] == '(') {
          int depth = 0;
          for (; j < t.size(); ++j) {
            if (t[j] == '(') ++depth;
            if (t[j] == ')' && --depth == 0) break;
          }
          i = j + 1;
          attr = true;
        }
        break;
      }
    if (!attr) out += t[i++];
  }
  return trim(out);
}

// The declarators of a declaration's text after its specifiers: split at top-level commas; each
// one's name is the identifier before its first '[' (or its last identifier).
std::vector<std::string> declarator_names(const Source& src, size_t b, size_t e) {
  std::vector<std::string> names;
  std::vector<std::pair<size_t, size_t>> parts;
  size_t start = b;
  int angle = 0;
  for (size_t j = b; j < e; ++j) {
    if (!src.code(j)) continue;
    const char c = src.at(j);
    if (c == '(' || c == '[' || c == '{') {
      j = src.match_forward(j);
      continue;
    }
    if (c == '<') ++angle;
    if (c == '>' && angle > 0) --angle;
    if (c == ',' && angle == 0) {
      parts.push_back({start, j});
      start = j + 1;
    }
  }
  parts.push_back({start, e});
  for (auto [pb, pe] : parts) {
    size_t stop = pe;
    for (size_t j = pb; j < pe; ++j)
      if (src.code(j) && src.at(j) == '[') {
        stop = j;
        break;
      }
    size_t ne = stop;
    while (ne > pb && !ident_char(src.at(ne - 1))) --ne;
    size_t nb = ne;
    while (nb > pb && ident_char(src.at(nb - 1))) --nb;
    if (nb == ne || std::isdigit(static_cast<unsigned char>(src.at(nb))))
      throw ConvertError(src.line_of(pb), "cannot find the name declared by this __shared__ declaration");
    names.emplace_back(src.text(nb, ne));
  }
  return names;
}

}  // namespace

std::string convert(std::string_view source, const std::string& file_name) {
  const Source src(source);
  std::vector<Edit> edits;
  for (size_t i = 0; i < src.size(); ++i) {
    if (!src.code(i)) continue;
    if (src.starts(i, "<<<")) {
      Edit e = launch_edit(src, i);
      // The kernel expression began before i: drop edits it swallowed only if they were none.
      if (!edits.empty() && edits.back().end > e.begin) throw ConvertError(src.line_of(i), "overlapping rewrites around this launch");
      i = e.end - 1;
      edits.push_back(std::move(e));
      continue;
    }
    const std::string_view w = src.word_at(i);
    if (w.empty()) continue;
    if (w == "extern") {
      const size_t n = src.skip_space(i + w.size());
      if (src.word_at(n) != "__shared__") {
        i += w.size() - 1;
        continue;
      }
      const size_t decl = n + std::string_view("__shared__").size();
      const size_t semi = declaration_end(src, decl);
      size_t bracket = std::string_view::npos;
      for (size_t j = decl; j < semi; ++j)
        if (src.code(j) && (src.at(j) == '[' || src.at(j) == ',')) {
          bracket = j;
          break;
        }
      if (bracket == std::string_view::npos || src.at(bracket) != '[' || src.at(src.skip_space(bracket + 1)) != ']' ||
          src.skip_space(src.skip_space(bracket + 1) + 1) != semi)
        throw ConvertError(src.line_of(i), "extern __shared__ must declare one array of unknown size: extern __shared__ T name[];");
      const size_t name_end = src.skip_space_back(bracket) + 1;
      size_t name_begin = name_end;
      while (name_begin > decl && ident_char(src.at(name_begin - 1))) --name_begin;
      const std::string name(src.text(name_begin, name_end));
      const std::string type = without_attributes(src.text(decl, name_begin));
      if (name.empty() || type.empty()) throw ConvertError(src.line_of(i), "cannot read this extern __shared__ declaration");
      edits.push_back({i, semi + 1,
                       "static " + type + "* const& " + name + " = reinterpret_cast<" + type +
                           "* const&>(::ob_emu::dynamic_shared_ref());" + newlines_in(src.text(i, semi))});
      i = semi;
      continue;
    }
    if (w == "__shared__") {
      if (src.pp(i)) {  // inside a macro: left to the header's fallback (#define __shared__ static)
        i += w.size() - 1;
        continue;
      }
      const size_t decl = i + w.size();
      const size_t semi = declaration_end(src, decl);
      // The declarators start after the type: the first top-level identifier-run boundary is hard to
      // find in general, so the names are taken per declarator (the identifier before its '[', or its
      // last identifier), which also covers the specifiers of the first one.
      const std::vector<std::string> names = declarator_names(src, decl, semi);
      std::string reg = " ::ob_emu::SharedStatic ";
      for (size_t k = 0; k < names.size(); ++k)
        reg += (k ? ", " : "") + std::string("ob_emu_shared_") + names[k] + "(&" + names[k] + ", sizeof(" + names[k] + "))";
      reg += ";";
      // `static __shared__` is already static.
      const size_t prev = src.skip_space_back(i);
      const bool was_static = prev != std::string_view::npos && prev >= 5 && src.word_at(prev - 5) == "static";
      edits.push_back({i, decl, was_static ? "" : "static"});
      edits.push_back({semi + 1, semi + 1, reg});
      i = semi;
      continue;
    }
    if (w == "__launch_bounds__") {
      const size_t open = src.skip_space(i + w.size());
      if (src.at(open) != '(') throw ConvertError(src.line_of(i), "__launch_bounds__ without its arguments");
      const size_t close = src.match_forward(open);
      const std::string args(src.text(open + 1, close));
      edits.push_back({i, close + 1, ""});
      // The kernel's parameter list, then its body (none: a declaration, checked where defined).
      size_t j = close + 1;
      while (j < src.size() && !(src.code(j) && src.at(j) == '(')) ++j;
      if (j >= src.size()) throw ConvertError(src.line_of(i), "__launch_bounds__ not followed by a function");
      j = src.match_forward(j) + 1;
      for (; j < src.size(); ++j) {
        if (!src.code(j)) continue;
        if (src.at(j) == '(') j = src.match_forward(j);
        else if (src.at(j) == ';' || src.at(j) == '{') break;
      }
      if (j < src.size() && src.at(j) == '{') edits.push_back({j + 1, j + 1, " ::ob_emu::launch_bounds(" + args + ");"});
      i = close;
      continue;
    }
    i += w.size() - 1;
  }
  std::stable_sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.begin < b.begin; });
  std::string out = "#include <cuda_runtime.h>\n#line 1 \"" + file_name + "\"\n";
  size_t pos = 0;
  for (const Edit& e : edits) {
    if (e.begin < pos) throw ConvertError(src.line_of(e.begin), "overlapping rewrites");
    out.append(source.substr(pos, e.begin - pos));
    out += e.text;
    pos = e.end;
  }
  out.append(source.substr(pos));
  return out;
}

}  // namespace ob_emu_convert
