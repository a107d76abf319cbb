// primkit — the command line: list backends, show their op coverage, run conformance, generate a backend
// project and run models. Each subcommand is in its own file (cmd_*.cpp); this file parses the command line
// (CLI11) and turns its errors into exit status 2 with a message that names the subcommand.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "primkit/primkit.h"

using namespace pk::cli;

#ifndef PK_PROJECT_VERSION
#error "tools/CMakeLists.txt defines PK_PROJECT_VERSION"
#endif

namespace {

// A plugin that crashes during a launch (run-model, conformance) kills the process; without this the shell
// shows nothing, or only "Segmentation fault" with no hint where to look. Async-signal-safe: write() a fixed
// text, then die of the same signal with its default action, so the exit status still tells the signal.
void on_fatal_signal(int sig) {
  const char *name = sig == SIGSEGV   ? "SIGSEGV"
                     : sig == SIGBUS  ? "SIGBUS"
                     : sig == SIGILL  ? "SIGILL"
                     : sig == SIGFPE  ? "SIGFPE"
                     : sig == SIGABRT ? "SIGABRT"
                                      : "a fatal signal";
  static const char head[] = "\nprimkit: killed by ";
  static const char tail[] =
      " (most likely inside a backend plugin's launch; `primkit conformance --backend NAME` narrows it down to "
      "an op)\n";
  ssize_t ignored = write(2, head, sizeof(head) - 1);
  ignored = write(2, name, std::strlen(name));
  ignored = write(2, tail, sizeof(tail) - 1);
  (void)ignored;
  signal(sig, SIG_DFL);
  raise(sig);
}

std::string version_text() {
  char text[160];
  std::snprintf(text, sizeof(text), "primkit %s (PrimKit ABI %u.%u; libprimkit speaks %u.%u)", PK_PROJECT_VERSION,
                PK_ABI_VERSION_MAJOR, PK_ABI_VERSION_MINOR, PK_VERSION_MAJOR(pk_runtime_abi_version()),
                PK_VERSION_MINOR(pk_runtime_abi_version()));
  return text;
}

// The subcommand the parser was inside when it failed (for the message), or the app itself.
const CLI::App &failing_command(const CLI::App &app) {
  for (const CLI::App *sub : app.get_subcommands()) return *sub;
  return app;
}

}  // namespace

int main(int argc, char **argv) {
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) signal(sig, on_fatal_signal);
  CLI::App app("primkit — PrimKit SDK command line", "primkit");
  app.set_version_flag("--version", version_text(), "Print the project and ABI versions and exit");
  app.require_subcommand(1);
  // A value given twice: the last one counts, as it did before the port to CLI11.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.footer(
      "Plugins are found in $PRIMKIT_PLUGIN_PATH (':'-separated folders) and the install's plugin folder.\n"
      "Each is first tried in a child process; one that crashes, exits or hangs there is listed, not loaded.\n"
      "`primkit COMMAND --help` describes a command's options. Exit status 2: the command line was wrong.");
  std::vector<Subcommand> commands;
  for (auto add :
       {add_list_command, add_info_command, add_conformance_command, add_new_backend_command, add_run_model_command})
    commands.push_back(add(app));
  if (argc < 2) {
    std::fputs(app.help().c_str(), stderr);
    return kUsageError;
  }
  // CLI11 would call a misspelt command or option "an argument not expected" or ask for a subcommand: name it.
  const std::string first = argv[1];
  if (first[0] == '-' && first != "-h" && first != "--help" && first != "--version")
    return usage_error(app, "unknown option '" + first + "' (options before the command: --help, --version)");
  if (first[0] != '-') {
    std::string known;
    bool found = false;
    for (const Subcommand &sub : commands) {
      known += (known.empty() ? "" : ", ") + sub.command->get_name();
      found = found || sub.command->check_name(argv[1]);
    }
    if (!found) return usage_error(app, "unknown command '" + first + "' (commands: " + known + ")");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);  // --help, --version
    const CLI::App &failing = failing_command(app);
    // CLI11 checks required options before unknown ones: `info --bogus` would say "BACKEND is required". The
    // unknown flag is the mistake to name.
    const std::vector<std::string> unknown = failing.remaining();
    if (dynamic_cast<const CLI::RequiredError *>(&e) != nullptr && !unknown.empty())
      return usage_error(failing, CLI::ExtrasError(unknown).what());
    return usage_error(failing, e.what());
  }
  const CLI::App *chosen = app.get_subcommands().front();
  for (const Subcommand &sub : commands)
    if (sub.command == chosen) return sub.run();
  return kUsageError;  // unreachable: the parser accepts only the commands above
}
