// cmd_new_backend.cpp — `primkit new-backend NAME [--dir DIR]`: copies the backend template that ships with the
// SDK (templates/backend) into DIR with NAME substituted for its placeholders, giving a vendor an out-of-tree
// CMake project that builds a null backend against the installed SDK.
//
// All or nothing: the project is written into a temporary folder next to DIR and renamed into place only once
// every file is written, so a bad name, an occupied DIR, a missing template or a failed write leaves nothing
// behind.
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "cli_common.hpp"

namespace fs = std::filesystem;

namespace pk::cli {
namespace {

// Where the template lives relative to the `primkit` executable once installed (bin/ → share/primkit/templates),
// and where the build tree's executable finds it in the source tree; both set by tools/CMakeLists.txt.
#ifndef PRIMKIT_TEMPLATES_RELATIVE_TO_BINDIR
#error "tools/CMakeLists.txt defines PRIMKIT_TEMPLATES_RELATIVE_TO_BINDIR"
#endif

constexpr const char *kTemplate = "backend";
// A folder counts as the template only if these are there: a half-installed SDK is reported, not copied.
constexpr const char *kRequiredTemplateFiles[] = {"CMakeLists.txt", "README.md", "src/@BACKEND_NAME@_backend.cpp"};
constexpr const char *kPlaceholderPrefix = "@BACKEND_";
// The plugin file is libprimkit_backend_NAME.so and the name travels in pk_backend_info.name (64 bytes).
constexpr size_t kMaxNameLength = 40;

struct Options {
  std::string name;
  std::string dir;  // empty: ./NAME
  fs::path chosen_dir() const { return dir.empty() ? fs::path(name) : fs::path(dir); }
};

// Backend names become C++ namespaces, CMake targets, file names and `--backend NAME`, hence [a-z][a-z0-9_]*.
bool check_name(const std::string &name, std::string *why) {
  if (name.empty() || name.size() > kMaxNameLength) {
    *why = "must be 1 to " + std::to_string(kMaxNameLength) + " characters long";
    return false;
  }
  if (!(name[0] >= 'a' && name[0] <= 'z')) {
    *why = "must start with a lowercase letter a-z";
    return false;
  }
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      *why = std::string("contains '") + c + "'; only lowercase letters, digits and '_' are allowed";
      return false;
    }
  }
  return true;
}

std::optional<fs::path> executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  return exe.parent_path();
}

bool is_template(const fs::path &dir) {
  std::error_code ec;
  for (const char *file : kRequiredTemplateFiles)
    if (!fs::is_regular_file(dir / file, ec)) return false;
  return true;
}

// The installed template (next to the executable); in the build tree, the source tree's. The source tree is
// consulted only by the executable the build tree made, so an installed `primkit` never reaches back into a
// checkout that may have moved on.
std::optional<fs::path> find_template(std::vector<fs::path> *searched) {
  std::optional<fs::path> exe_dir = executable_dir();
  if (exe_dir) {
    fs::path installed = (*exe_dir / PRIMKIT_TEMPLATES_RELATIVE_TO_BINDIR / kTemplate).lexically_normal();
    searched->push_back(installed);
    if (is_template(installed)) return installed;
  }
#if defined(PRIMKIT_BUILD_BINDIR) && defined(PRIMKIT_SOURCE_TEMPLATES_DIR)
  std::error_code ec;
  if (exe_dir && fs::equivalent(*exe_dir, PRIMKIT_BUILD_BINDIR, ec)) {
    fs::path source = fs::path(PRIMKIT_SOURCE_TEMPLATES_DIR) / kTemplate;
    searched->push_back(source);
    if (is_template(source)) return source;
  }
#endif
  return std::nullopt;
}

// The installed SDK prefix (for the CMAKE_PREFIX_PATH the next steps print), when `primkit` runs from one.
std::optional<fs::path> installed_prefix() {
#if defined(PRIMKIT_PREFIX_RELATIVE_TO_BINDIR) && defined(PRIMKIT_PACKAGE_RELATIVE_TO_PREFIX)
  std::optional<fs::path> exe_dir = executable_dir();
  if (!exe_dir) return std::nullopt;
  fs::path prefix = (*exe_dir / PRIMKIT_PREFIX_RELATIVE_TO_BINDIR).lexically_normal();
  if (!prefix.has_filename()) prefix = prefix.parent_path();  // "bin/.." normalizes to "prefix/"
  std::error_code ec;
  if (fs::is_regular_file(prefix / PRIMKIT_PACKAGE_RELATIVE_TO_PREFIX / "PrimKitConfig.cmake", ec)) return prefix;
#endif
  return std::nullopt;
}

std::string replace_all(std::string text, const std::string &from, const std::string &to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// Removes a folder tree on scope exit unless released: the temporary project of a failed run.
class RemoveOnExit {
 public:
  explicit RemoveOnExit(fs::path path) : path_(std::move(path)) {}
  RemoveOnExit(const RemoveOnExit &) = delete;
  RemoveOnExit &operator=(const RemoveOnExit &) = delete;
  ~RemoveOnExit() {
    if (!path_.empty()) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  void release() { path_.clear(); }

 private:
  fs::path path_;
};

struct Substitution {
  std::string placeholder;
  std::string value;
};

std::string substitute(std::string text, const std::vector<Substitution> &subs) {
  for (const Substitution &s : subs) text = replace_all(std::move(text), s.placeholder, s.value);
  return text;
}

// Copies every file of the template into `out` with the placeholders substituted in names and contents.
// Returns an error message, empty on success.
std::string write_project(const fs::path &from, const fs::path &out, const std::vector<Substitution> &subs,
                          size_t *files) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(from, ec), end; it != end; it.increment(ec)) {
    if (ec) break;
    const fs::path relative = fs::path(substitute(it->path().lexically_relative(from).generic_string(), subs));
    const fs::path target = out / relative;
    if (it->is_directory(ec)) {
      fs::create_directories(target, ec);
      if (ec) return "cannot create " + target.string() + ": " + ec.message();
      continue;
    }
    if (!it->is_regular_file(ec)) continue;  // links and special files are not part of a template
    std::ifstream in(it->path(), std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) return "cannot read " + it->path().string();
    text = substitute(std::move(text), subs);
    if (text.find(kPlaceholderPrefix) != std::string::npos) {
      return "the template file " + it->path().string() + " has a placeholder new-backend does not know (" +
             kPlaceholderPrefix + "...@)";
    }
    fs::create_directories(target.parent_path(), ec);
    std::ofstream file(target, std::ios::binary | std::ios::trunc);
    file << text;
    file.close();
    if (!file) return "cannot write " + target.string();
    fs::permissions(target, it->status().permissions(), ec);  // keeps scripts executable
    ++*files;
  }
  if (ec) return "cannot list the template " + from.string() + ": " + ec.message();
  return {};
}

// A new DIR: one rename, atomic. Returns an error message, empty on success.
std::string move_folder(const fs::path &from, const fs::path &to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  return ec ? ec.message() : std::string();
}

// An existing empty DIR (perhaps the user's current folder) keeps its identity: renaming over it would leave a
// shell sitting in it in a deleted folder. Its entries move in one by one and move back if one fails.
std::string move_children(const fs::path &from, const fs::path &to) {
  std::error_code ec;
  std::vector<fs::path> names;
  for (fs::directory_iterator it(from, ec), end; it != end && !ec; it.increment(ec))
    names.push_back(it->path().filename());
  if (ec) return ec.message();
  for (size_t i = 0; i < names.size(); ++i) {
    fs::rename(from / names[i], to / names[i], ec);
    if (ec) {
      const std::string message = ec.message();
      for (size_t j = 0; j < i; ++j) fs::rename(to / names[j], from / names[j], ec);
      return message;
    }
  }
  return {};
}

int new_backend(const Options &options) {
  std::string why;
  if (!check_name(options.name, &why)) {
    std::fprintf(stderr, "primkit new-backend: invalid backend name '%s': it %s (e.g. acme, acme_npu2)\n",
                 options.name.c_str(), why.c_str());
    return 2;
  }
  fs::path dir = fs::absolute(options.chosen_dir()).lexically_normal();
  if (!dir.has_filename()) dir = dir.parent_path();  // "acme/" and "." name the folder itself
  const fs::path shown_dir = options.chosen_dir();
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) {
      std::fprintf(stderr, "primkit new-backend: %s exists and is not a folder\n", shown_dir.c_str());
      return 1;
    }
    if (!fs::is_empty(dir, ec)) {
      std::fprintf(stderr, "primkit new-backend: %s is not empty; choose a new folder with --dir\n", shown_dir.c_str());
      return 1;
    }
  }
  const fs::path parent = dir.parent_path();
  if (!fs::is_directory(parent, ec)) {
    std::fprintf(stderr, "primkit new-backend: the folder %s does not exist; create it first\n", parent.c_str());
    return 1;
  }
  std::vector<fs::path> searched;
  const std::optional<fs::path> from = find_template(&searched);
  if (!from) {
    std::fprintf(stderr, "primkit new-backend: the backend template is missing from this PrimKit SDK; looked in:\n");
    for (const fs::path &p : searched) std::fprintf(stderr, "  %s\n", p.c_str());
    std::fprintf(stderr,
                 "Reinstall the SDK (`cmake --install BUILD --prefix PREFIX` installs share/primkit/templates)\n");
    return 1;
  }

  // A sibling of DIR, so that the final rename stays on one file system and is atomic.
  std::string pattern = (parent / ("." + dir.filename().string() + ".primkit-new-backend-XXXXXX")).string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    std::fprintf(stderr, "primkit new-backend: cannot create a temporary folder in %s: %s\n", parent.c_str(),
                 std::strerror(errno));
    return 1;
  }
  const fs::path temp(buffer.data());
  RemoveOnExit cleanup(temp);
  std::string upper = options.name;
  for (char &c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::vector<Substitution> subs = {{"@BACKEND_NAME_UPPER@", upper}, {"@BACKEND_NAME@", options.name}};
  size_t files = 0;
  const std::string error = write_project(*from, temp, subs, &files);
  if (!error.empty()) {
    std::fprintf(stderr, "primkit new-backend: %s; nothing was written\n", error.c_str());
    return 1;
  }
  // mkdtemp made the folder private (0700); a project folder gets the usual permissions.
  fs::permissions(temp,
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                      fs::perms::others_exec,
                  ec);
  const std::string move_error = fs::exists(dir, ec) ? move_children(temp, dir) : move_folder(temp, dir);
  if (!move_error.empty()) {
    std::fprintf(stderr, "primkit new-backend: cannot move the project into %s: %s; nothing was written\n",
                 shown_dir.c_str(), move_error.c_str());
    return 1;
  }

  const std::optional<fs::path> prefix = installed_prefix();
  const std::string build = (shown_dir / "build").string();
  std::printf("Created the '%s' backend in %s (%zu files from %s).\n\nNext steps:\n", options.name.c_str(),
              shown_dir.c_str(), files, from->c_str());
  std::printf("  cmake -S %s -B %s -DCMAKE_PREFIX_PATH=%s\n", shown_dir.c_str(), build.c_str(),
              prefix ? prefix->c_str() : "<the PrimKit install prefix>");
  std::printf("  cmake --build %s && ctest --test-dir %s\n", build.c_str(), build.c_str());
  std::printf("  primkit conformance --backend %s/libprimkit_backend_%s.so --profile quick\n", build.c_str(),
              options.name.c_str());
  std::printf("  primkit run-model --backend %s/libprimkit_backend_%s.so --model mlp\n", build.c_str(),
              options.name.c_str());
  if (!prefix) {
    std::printf(
        "\nThis primkit runs from a build tree: install the SDK first (cmake --install BUILD --prefix PREFIX)\n"
        "and point CMAKE_PREFIX_PATH at PREFIX.\n");
  }
  std::printf("\nThen implement ops one by one: see %s/README.md (TODO(vendor) marks every place to fill in).\n",
              shown_dir.c_str());
  return 0;
}

}  // namespace

Subcommand add_new_backend_command(CLI::App &app) {
  auto options = std::make_shared<Options>();
  CLI::App *cmd = app.add_subcommand("new-backend", "Write an out-of-tree backend project from the SDK's template");
  cmd->add_option("NAME", options->name, "The backend's name: [a-z][a-z0-9_]*, at most 40 characters")->required();
  cmd->add_option("--dir", options->dir, "Where to write it; must not exist or be empty (default ./NAME)")
      ->type_name("DIR");
  cmd->footer(
      "Writes an out-of-tree CMake project for a backend named NAME into DIR: a null backend on a simulated\n"
      "device whose ops all answer \"not supported\", with TODO(vendor) markers and the worked example kernel\n"
      "add f32 behind -D<NAME>_ENABLE_EXAMPLE_ADD=ON.");
  return {cmd, [options] { return new_backend(*options); }};
}

}  // namespace pk::cli
