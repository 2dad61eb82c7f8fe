// The test binaries' main: Catch2's, after one check. A test case tagged with
// something this run cannot provide is not run but reported to ctest as
// skipped (exit 77, SKIP_RETURN_CODE in tests/CMakeLists.txt), never as
// passed (docs/TESTING.md "Against external servers"):
//   [mock-faults]  injects broker faults: needs the mock cluster, in-process
//                  or over OUTBOX_TEST_KAFKA_CONTROL, not a real Kafka
//                  (OUTBOX_TEST_KAFKA_BOOTSTRAP)
//   [local-db]     stops, restarts or reconfigures the test database server,
//                  or reads its TLS files: needs the MariaDB scripts/test
//                  started (OUTBOX_TEST_MYSQL_DIR)
// Before that check, the test MariaDB is the one ctest gave this test (one
// server per parallel slot, RESOURCE_GROUPS in tests/CMakeLists.txt): the
// slot's OUTBOX_TEST_MYSQL_*_N variables become OUTBOX_TEST_MYSQL_*, for this
// process and the relays it starts (as tests/support/with_test_mariadb.sh
// does for the scripts).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdlib>
#include <iostream>
#include <string>

namespace {

// The server of ctest's slot "id:N,slots:1" in CTEST_RESOURCE_GROUP_0_MARIADB,
// when scripts/test exported one for slot N; otherwise nothing changes.
void UseSlotMariaDb() {
  const char* group = std::getenv("CTEST_RESOURCE_GROUP_0_MARIADB");
  if (!group) return;
  const std::string g = group;
  const size_t id = g.find("id:");
  if (id == std::string::npos) return;
  const std::string slot = g.substr(id + 3, g.find(',', id) - id - 3);
  for (const char* name : {"OUTBOX_TEST_MYSQL_PORT", "OUTBOX_TEST_MYSQL_SOCKET",
                           "OUTBOX_TEST_MYSQL_DIR", "OUTBOX_TEST_MYSQLD_CMD"}) {
    const char* own = std::getenv((std::string(name) + "_" + slot).c_str());
    if (own && *own) setenv(name, own, 1);
  }
}

bool EnvSet(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}

// Why a test case with `tag` cannot run here, or "".
std::string Unmet(const std::string& tag) {
  if (tag == "mock-faults" && EnvSet("OUTBOX_TEST_KAFKA_BOOTSTRAP") &&
      !EnvSet("OUTBOX_TEST_KAFKA_CONTROL"))
    return "it injects broker faults, which a real Kafka (OUTBOX_TEST_KAFKA_BOOTSTRAP) cannot";
  if (tag == "local-db" && !EnvSet("OUTBOX_TEST_MYSQL_DIR"))
    return "it stops or reconfigures the test database, which only the MariaDB that "
           "scripts/test starts allows (OUTBOX_TEST_MYSQL_DIR is not set)";
  return "";
}

std::string UnmetFor(const Catch::TestCase& test) {
  for (const auto& tag : test.lcaseTags) {
    std::string why = Unmet(tag);
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  UseSlotMariaDb();
  Catch::Session session;
  if (int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  const Catch::Config& config = session.config();
  if (config.listTests() || config.listTestNamesOnly() || config.listTags() ||
      config.listReporters())
    return session.run();
  const auto selected =
      Catch::filterTests(Catch::getAllTestCasesSorted(config), config.testSpec(), config);
  size_t unmet = 0;
  std::string why;
  for (const auto& test : selected) {
    const std::string w = UnmetFor(test);
    if (w.empty()) continue;
    ++unmet;
    why = "skipped \"" + test.name + "\": " + w;
  }
  if (unmet > 0 && unmet == selected.size()) {
    std::cout << why << "\n";
    return 77;
  }
  if (unmet > 0) {
    std::cerr << unmet << " of the " << selected.size() << " selected test cases cannot run here ("
              << why << "); exclude them, e.g. with ~[mock-faults]~[local-db]\n";
    return 2;
  }
  return session.run();
}
