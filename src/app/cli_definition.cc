#include "app/cli_definition.h"

#include <charconv>

namespace outbox {

namespace {

// An id that does not fit the column's BIGINT would be clamped to its limit
// and then reported as "not DEAD": refuse it as a usage error.
CLI::Validator RowId() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        int64_t v = 0;
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc() || end != s.data() + s.size()) return "not a row id (a BIGINT): " + s;
        return "";
      },
      "ID");
}

CLI::App* DefineDeadList(CLI::App& dead, CliArgs& a) {
  auto* list = dead.add_subcommand("list", "list DEAD rows");
  list->add_option("--service", a.service, "service name")->required();
  list->add_option("--limit", a.limit, "at most this many rows")->check(CLI::Range(1, 1000000));
  list->add_flag("--json", a.json, "JSON output");
  return list;
}

CLI::App* DefineDeadReplay(CLI::App& dead, CliArgs& a) {
  auto* replay =
      dead.add_subcommand("replay", "DEAD -> NEW with retry_count=0, next_retry_at=NOW()");
  replay->add_option("--service", a.service, "service name")->required();
  auto* id_opt = replay->add_option("--id", a.ids, "row id(s)")->check(RowId());
  auto* all_opt = replay->add_flag("--all", a.all, "every DEAD row");
  auto* et_opt =
      replay->add_option("--event-type", a.event_type, "every DEAD row of this event type");
  replay->add_flag("--dry-run", a.dry_run, "show what would change, change nothing");
  replay->add_flag("--json", a.json, "JSON output");
  id_opt->excludes(all_opt)->excludes(et_opt);
  all_opt->excludes(et_opt);
  return replay;
}

// A subcommand's help ends with the options it accepts from the commands
// above it (-c/--config, -V/--version): they work after the subcommand too.
class InheritedOptionsFormatter : public CLI::Formatter {
 public:
  std::string make_footer(const CLI::App* app) const override {
    std::vector<const CLI::Option*> inherited;
    for (const CLI::App* p = app->get_parent(); p != nullptr; p = p->get_parent())
      for (const CLI::Option* o : p->get_options([p](const CLI::Option* o) {
             return o != p->get_help_ptr() && o != p->get_help_all_ptr();
           }))
        inherited.push_back(o);
    std::string out;
    if (!inherited.empty()) {
      out = make_group("Options of outbox-relay, also accepted here", false, inherited);
      if (!out.empty() && out.front() == '\n') out.erase(0, 1);  // one blank line, not two
    }
    return out + CLI::Formatter::make_footer(app);
  }
};

}  // namespace

CliCommands DefineCli(CLI::App& app, CliArgs& a) {
  app.formatter(std::make_shared<InheritedOptionsFormatter>());  // inherited by subcommands
  app.require_subcommand(0, 1);
  // Inherited by every subcommand added below: an option a subcommand does
  // not know (-c, --config, -V) is tried on its parent.
  app.fallthrough();
  app.add_option("-c,--config", a.config_path,
                 "config file (default: $OUTBOX_RELAY_CONFIG, else /etc/outbox-relay/config.yaml)");
  app.add_flag("-V,--version", a.version, "print versions and exit");

  CliCommands cmd;
  cmd.run = app.add_subcommand("run", "run the daemon (also what -c FILE alone does)");
  cmd.check = app.add_subcommand(
      "check", "validate the config file; --connect also reaches every database and broker");
  cmd.check->add_flag("--connect", a.connect,
                      "reach every database and broker, verify table, columns and index");
  cmd.dead = app.add_subcommand("dead", "list or replay DEAD rows");
  cmd.dead->require_subcommand(1);
  cmd.dead_list = DefineDeadList(*cmd.dead, a);
  cmd.dead_replay = DefineDeadReplay(*cmd.dead, a);
  cmd.health = app.add_subcommand(
      "health", "GET /healthz of the relay on http.listen (or --url): exit 0 on 200, else 1");
  cmd.health->add_option("--url", a.url,
                         "probe this URL instead, e.g. http://127.0.0.1:9464/healthz");
  cmd.health->add_option("--timeout-ms", a.timeout_ms, "give up after this long")
      ->check(CLI::Range(1, 600000));
  cmd.version = app.add_subcommand("version", "print versions");
  cmd.help = app.add_subcommand("help", "print this help, or a command's: help dead replay");
  cmd.help->add_option("command", a.help_path, "a command and its subcommands");
  return cmd;
}

}  // namespace outbox
