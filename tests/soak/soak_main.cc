// outbox-soak: see soak.h and scripts/soak.
//   outbox-soak [--minutes M] [--seed S] [--fault-every SECONDS] [--rate EVENTS_PER_S]
//               [--lease-ms MS] [--json FILE] [--report-dir DIR]
//               [--skip-without-local-db]
//   outbox-soak --report-from FILE.json --report-dir DIR   (the report of a run, again)
// Needs OUTBOX_SOURCE_DIR's scripts/lib/mariadb.sh (compiled in) and the
// binaries of this build (outbox-relay, outbox-load, outbox-check).
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "soak/soak.h"

int main(int argc, char** argv) {
  outbox::soak::Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--skip-without-local-db") {
      // ctest's short run: like the [local-db] test cases (tests/main.cc),
      // skipped (77) when scripts/test runs against external servers.
      const char* dir = std::getenv("OUTBOX_TEST_MYSQL_DIR");
      if (!dir || !*dir) {
        std::cout << "outbox-soak: skipped (OUTBOX_TEST_MYSQL_DIR unset: no local MariaDB)\n";
        return 77;
      }
      continue;
    }
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!v) {
      std::cerr << "outbox-soak: " << a << " needs a value\n";
      return 2;
    }
    if (a == "--minutes") {
      o.minutes = std::stod(v);
    } else if (a == "--seed") {
      o.seed = std::stoull(v);
    } else if (a == "--fault-every") {
      o.fault_every_s = std::stod(v);
    } else if (a == "--rate") {
      o.rate = std::stod(v);
    } else if (a == "--lease-ms") {
      o.lease_ms = std::stoll(v);
    } else if (a == "--json") {
      o.out_json = v;
    } else if (a == "--report-dir") {
      o.report_dir = v;
    } else if (a == "--report-from") {
      o.report_from = v;
    } else {
      std::cerr << "outbox-soak: unknown option " << a << "\n";
      return 2;
    }
    ++i;
  }
  if (!o.report_from.empty()) {
    // The report of an earlier run, again (its --json file).
    std::ifstream in(o.report_from);
    outbox::soak::WriteReport(nlohmann::json::parse(in), o.report_dir.empty() ? "." : o.report_dir);
    return 0;
  }
  return outbox::soak::Run(o);
}
