# The config library's sources, one list for src/config/CMakeLists.txt and
# the fuzz build (tests/fuzz/CMakeLists.txt), which compiles them again
# with clang's instrumentation: a file added here is in both.
set(OUTBOX_CONFIG_SOURCES
  config.cc
  config_diff.cc
  config_envelope.cc
  config_fleet.cc
  config_loader.cc
  config_mysql.cc
  config_parser.cc
  config_password.cc
  config_service.cc
  config_values.cc
  env_expand.cc
  registry_url.cc
  topic_template.cc
)
