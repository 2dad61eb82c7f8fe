#include "support/scenario.h"

#include <arpa/inet.h>
#include <cppconn/exception.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

#include "outbox/mysql_connection.h"
#include "support/metrics_text.h"
#include "support/wait.h"

namespace outbox::testing {

std::string ScratchDir(const std::string& scenario) {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = std::string(tmp && *tmp ? tmp : "/tmp") + "/outbox-faults-" +
                     std::to_string(getpid()) + "-" + scenario;
  std::string cmd = "rm -rf '" + base + "' && mkdir -p '" + base + "'";
  if (std::system(cmd.c_str()) != 0) return "/tmp";
  return base;
}

uint64_t ScenarioSeed(uint64_t fallback) {
  const char* s = std::getenv("OUTBOX_FAULTS_SEED");
  return s && *s ? std::stoull(s) : fallback;
}

double ScenarioScale() {
  const char* s = std::getenv("OUTBOX_FAULTS_SCALE");
  return s && *s ? std::stod(s) : 1.0;
}

// ------------------------------------------------------------------- relays

RelayProcess::RelayProcess(std::string name, const std::string& dir, RelaySpec spec)
    : name_(std::move(name)),
      config_(dir + "/" + name_ + ".yaml"),
      log_(dir + "/" + name_ + ".log"),
      spec_(std::move(spec)) {
  // OUTBOX_FAULTS_KAFKA_DEBUG=eos,msg,... : librdkafka debug contexts for
  // every relay, logged at debug level (to see what the producer did).
  if (const char* d = std::getenv("OUTBOX_FAULTS_KAFKA_DEBUG"); d && *d) {
    spec_.kafka_properties["debug"] = d;
    spec_.log_level = "debug";
  }
  const RelaySpec& s = spec_;
  std::ofstream f(config_);
  f << "instance_id: " << name_ << "\n"
    << "http: {listen: 127.0.0.1:0}\n"
    << "log: {format: text, level: " << s.log_level << "}\n"
    << "kafka:\n  bootstrap_servers: \"" << s.bootstrap << "\"\n";
  if (!s.kafka_properties.empty()) {
    f << "  properties:\n";
    for (const auto& [k, v] : s.kafka_properties) f << "    " << k << ": \"" << v << "\"\n";
  }
  f << s.top_yaml << "services:\n"
    << "  - name: " << s.service << "\n"
    << (s.topic.empty() ? "" : "    topic: \"" + s.topic + "\"\n") << "    mysql:\n"
    << "      host: " << s.mysql.host << "\n"
    << "      port: " << s.mysql.port << "\n"
    << "      user: " << s.mysql.user << "\n"
    << (s.mysql.password.empty() ? "" : "      password_env: OUTBOX_TEST_MYSQL_PASSWORD\n")
    << "      database: " << s.mysql.database << "\n"
    << "      tls: {mode: disabled}\n"
    << "      connect_timeout_ms: " << s.connect_timeout_ms << "\n"
    << "      read_timeout_ms: " << s.read_timeout_ms << "\n"
    << "    batch_size: " << s.batch_size << "\n"
    << "    poll_interval_ms: " << s.poll_interval_ms << "\n"
    << "    lease_ms: " << s.lease_ms << "\n"
    << "    max_inflight_batches: " << s.max_inflight_batches << "\n"
    << "    gauge_interval_ms: " << s.gauge_interval_ms << "\n"
    << "    ordering: " << s.ordering << "\n"
    << "    wakeup: " << s.wakeup << "\n"
    << "    dead_policy: " << s.dead_policy << "\n"
    << "    retry: {max_attempts: " << s.max_attempts
    << ", initial_backoff_ms: " << s.initial_backoff_ms << ", max_backoff_ms: " << s.max_backoff_ms
    << "}\n"
    << s.extra_services_yaml;
}

std::string RelaySpec::DefaultWakeup() {
  const char* w = std::getenv("OUTBOX_FAULTS_WAKEUP");
  return w && *w ? w : "poll";
}

RelayProcess::~RelayProcess() { proc_.Kill(); }

bool RelayProcess::WaitWakeupsUp(std::chrono::milliseconds timeout) {
  // In a fleet the relay serves only what the group assigns it, later.
  if (spec_.wakeup != "binlog" || spec_.top_yaml.find("fleet:") != std::string::npos) return true;
  return WaitFor([&] { return Metric("outbox_wakeup_binlog_up") == 1; }, timeout);
}

bool RelayProcess::Start() {
  std::ifstream probe(log_, std::ios::ate);
  std::streamoff offset = probe ? static_cast<std::streamoff>(probe.tellg()) : 0;
  std::map<std::string, std::string> env;
  if (!spec_.mysql.password.empty()) env["OUTBOX_TEST_MYSQL_PASSWORD"] = spec_.mysql.password;
  std::vector<std::string> argv = spec_.launcher;
  argv.insert(argv.end(),
              {spec_.binary.empty() ? OUTBOX_BINARY : spec_.binary, "run", "--config", config_});
  if (!proc_.Start(argv, log_, env)) return false;
  port_ = 0;
  return WaitFor(
             [&] {
               std::string text = ReadFile(log_);
               if (static_cast<std::streamoff>(text.size()) < offset) return false;
               port_ = ServingPort(text.substr(static_cast<size_t>(offset)));
               return port_ != 0 || !proc_.running();  // exited: give up at once
             },
             std::chrono::seconds(30)) &&
         port_ != 0 && WaitWakeupsUp(std::chrono::seconds(30));
}

std::optional<int> RelayProcess::Stop(std::chrono::milliseconds timeout) {
  proc_.Signal(SIGTERM);
  return proc_.Wait(timeout);
}

std::string RelayProcess::Metrics() {
  if (port_ == 0) return "";
  HttpReply r = HttpGet(port_, "/metrics");
  return r.status == 200 ? r.body : "";
}

double RelayProcess::Metric(const std::string& name) {
  std::string text = Metrics();
  double v = MetricSum(text, name, "service=\"" + spec_.service + "\"");
  if (!text.empty()) last_seen_[name] = v;
  return v;
}

int RelayProcess::ReadyzStatus() { return port_ == 0 ? 0 : HttpGet(port_, "/readyz").status; }

void RelayProcess::Remember() {
  for (auto& [name, v] : last_seen_) earlier_[name] += v;
  last_seen_.clear();
}

double RelayProcess::Total(const std::string& name) {
  double now = proc_.running() ? Metric(name) : last_seen_[name];
  return earlier_[name] + now;
}

// ------------------------------------------------------------ load, check

namespace {
std::vector<std::string> ConnectionArgs(const MysqlConfig& m) {
  return {"--host", m.host, "--port",     std::to_string(m.port),
          "--user", m.user, "--database", m.database};
}
}  // namespace

int RunLoad(const MysqlConfig& mysql, const std::vector<std::string>& args,
            const std::string& log_path, std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {OUTBOX_LOAD_BINARY};
  for (auto& a : ConnectionArgs(mysql)) argv.push_back(a);
  for (auto& a : args) argv.push_back(a);
  return RunToCompletion(argv, log_path, timeout, {{"OUTBOX_LOAD_MYSQL_PASSWORD", mysql.password}});
}

bool StartLoad(LoggedProcess* proc, const MysqlConfig& mysql, const std::vector<std::string>& args,
               const std::string& log_path) {
  std::vector<std::string> argv = {OUTBOX_LOAD_BINARY};
  for (auto& a : ConnectionArgs(mysql)) argv.push_back(a);
  for (auto& a : args) argv.push_back(a);
  return proc->Start(argv, log_path, {{"OUTBOX_LOAD_MYSQL_PASSWORD", mysql.password}});
}

CheckResult RunCheck(const MysqlConfig& mysql, const std::string& bootstrap,
                     const std::vector<std::string>& extra, const std::string& dir,
                     const std::string& tag, std::chrono::milliseconds timeout) {
  CheckResult r;
  std::string json = dir + "/check-" + tag + ".json";
  std::string out = dir + "/check-" + tag + ".txt";
  std::vector<std::string> argv = {OUTBOX_CHECK_BINARY};
  for (auto& a : ConnectionArgs(mysql)) argv.push_back(a);
  argv.insert(argv.end(), {"--bootstrap", bootstrap, "--json", json});
  bool has_topics = false;
  for (const auto& e : extra) has_topics = has_topics || e == "--topic" || e == "--topic-regex";
  if (!has_topics) argv.insert(argv.end(), {"--topic-regex", "^outbox\\.event\\."});
  for (const auto& e : extra) argv.push_back(e);
  r.exit_code =
      RunToCompletion(argv, out, timeout, {{"OUTBOX_CHECK_MYSQL_PASSWORD", mysql.password}});
  r.output = ReadFile(out);
  std::string text = ReadFile(json);
  if (!text.empty()) r.report = nlohmann::json::parse(text, nullptr, false);
  std::cout << "outbox-check (" << tag << "):\n" << r.output << std::flush;
  return r;
}

// ---------------------------------------------------------------- queries

namespace {
// A short session through the relay's own connection code, without TLS and
// with short timeouts: the scenarios poll it while the database restarts.
std::unique_ptr<MysqlConnection> Open(MysqlConfig m) {
  m.tls.mode = TlsMode::kDisabled;
  m.connect_timeout_ms = 2000;
  m.read_timeout_ms = 10000;
  auto c = std::make_unique<MysqlConnection>(std::move(m));
  if (!c->Connect().ok()) return nullptr;
  return c;
}
}  // namespace

int64_t UnsentRows(const MysqlConfig& mysql) {
  try {
    auto c = Open(mysql);
    if (!c) return -1;
    std::unique_ptr<sql::Statement> st(c->raw()->createStatement());
    std::unique_ptr<sql::ResultSet> rs(st->executeQuery("SELECT COUNT(*) FROM " + mysql.table +
                                                        " WHERE status IN ('NEW', 'SENDING')"));
    return rs->next() ? rs->getInt64(1) : -1;
  } catch (const sql::SQLException&) {
    return -1;
  }
}

std::map<std::string, int64_t> RowsByStatus(const MysqlConfig& mysql) {
  std::map<std::string, int64_t> out;
  try {
    auto c = Open(mysql);
    if (!c) return out;
    std::unique_ptr<sql::Statement> st(c->raw()->createStatement());
    std::unique_ptr<sql::ResultSet> rs(
        st->executeQuery("SELECT status, COUNT(*) FROM " + mysql.table + " GROUP BY status"));
    while (rs->next()) out[rs->getString(1)] = rs->getInt64(2);
  } catch (const sql::SQLException&) {
  }
  return out;
}

void RecordFigures(const std::string& scenario, const nlohmann::json& figures) {
  nlohmann::json line = figures;
  line["scenario"] = scenario;
  std::cout << "FIGURES " << line.dump() << std::endl;
  if (const char* path = std::getenv("OUTBOX_FAULTS_FIGURES"); path && *path) {
    std::ofstream(path, std::ios::app) << line.dump() << "\n";
  }
}

}  // namespace outbox::testing
