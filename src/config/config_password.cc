#include "config/config_password.h"

#include "config/config_parser.h"  // Quoted, IsVariableName, ReadFileFromDisk

namespace outbox {
namespace {

using config_internal::Quoted;

[[noreturn]] void Problem(const YAML::Node& n, const std::string& path, const std::string& what) {
  throw ConfigProblem{n.Mark(), path, what};
}

Password FromEnv(const YAML::Node& pe, const std::string& where, const LoadOptions& options,
                 const std::string& example_variable) {
  // The name of the variable, taken literally: expanding ${...} here would
  // put the password itself where a name belongs, and into this message.
  if (!pe.IsScalar())
    Problem(pe, where, std::string("must be a string, not ") + config_internal::Parser::Shape(pe));
  const std::string& var = pe.Scalar();
  if (var.find('$') != std::string::npos)
    Problem(pe, where,
            "takes the name of an environment variable, not its value: write password_env: " +
                example_variable + ", without ${}");
  if (!config_internal::IsVariableName(var))
    Problem(
        pe, where,
        "must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*) (got " + Quoted(var) + ")");
  auto v = options.env(var);
  if (!v) Problem(pe, where, "environment variable " + var + " is not set");
  return {*v, "env:" + var};
}

Password FromFile(const YAML::Node& pf, const std::string& where, const LoadOptions& options,
                  std::vector<std::string>* warnings) {
  if (!pf.IsScalar())
    Problem(pf, where, std::string("must be a string, not ") + config_internal::Parser::Shape(pf));
  std::string err;
  const std::string file = ExpandEnv(pf.Scalar(), options.env, &err);
  if (!err.empty()) Problem(pf, where, err);
  if (file.empty()) Problem(pf, where, "must not be empty");
  // Messages name the path as written: a mistaken ${DB_PASSWORD} here
  // must not print the password it expands to.
  const std::string shown = file == pf.Scalar() ? file : pf.Scalar() + " (expanded)";
  FileRead r =
      options.read_file ? options.read_file(file) : config_internal::ReadFileFromDisk(file);
  if (!r.info) Problem(pf, where, "cannot read " + Quoted(shown) + ": " + r.error);
  // Warned, not refused: Kubernetes mounts Secrets 0644 unless told
  // otherwise, and the process user is what protects the file there.
  if (r.info->group_or_other_readable)
    warnings->push_back(where + ": " + Quoted(shown) +
                        " is readable by group or others; chmod 600 it");
  Password p{std::move(r.info->contents), "file:" + shown};
  while (!p.value.empty() && (p.value.back() == '\n' || p.value.back() == '\r')) p.value.pop_back();
  if (p.value.empty())
    Problem(pf, where,
            Quoted(shown) + " is empty; leave out password_file to connect without a password");
  return p;
}

}  // namespace

Password ReadPassword(const YAML::Node& n, const std::string& path, const LoadOptions& options,
                      const std::string& example_variable, std::vector<std::string>* warnings) {
  const YAML::Node pe = n["password_env"], pf = n["password_file"];
  if (pe && pf)
    Problem(pf, path + ".password_file", "give either password_env or password_file, not both");
  if (pe) return FromEnv(pe, path + ".password_env", options, example_variable);
  if (pf) return FromFile(pf, path + ".password_file", options, warnings);
  return {};
}

}  // namespace outbox
