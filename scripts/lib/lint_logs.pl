#!/usr/bin/perl
# scripts/lint's "logs" check (docs/LOGS.md): prints one line per violation
# in the files given, "logs: FILE:LINE: what".
#  - `spdlog::` outside the logging unit (the caller leaves src/common/log.*
#    out): every line goes through src/common/log.h;
#  - a structured log call whose message is not a string literal (adjacent
#    literals count as one): a variable belongs in a field, so that `msg`
#    stays a constant to filter on.
# With --spdlog-only first, the first rule only (the inbox library, whose
# lines are formatted sentences).
# Comments and the contents of string literals are ignored.
use strict;
use warnings;

my $spdlog_only = @ARGV && $ARGV[0] eq '--spdlog-only' ? shift @ARGV : 0;

my $literal = qr/"(?:[^"\\\n]|\\.)*"/;

for my $file (@ARGV) {
  open(my $fh, '<', $file) or die "lint_logs: $file: $!\n";
  my $text = do { local $/; <$fh> };
  close $fh;
  # Blank out comments and string contents (keeping the quotes and every
  # newline, so offsets still give line numbers).
  my $code = $text;
  $code =~ s{("(?:[^"\\\n]|\\.)*")|(//[^\n]*)|(/\*.*?\*/)}{
    defined $1 ? '"' . ('x' x (length($1) - 2)) . '"'
               : do { (my $c = ($2 // $3)) =~ s/[^\n]/ /g; $c } }gse;
  my $line_of = sub { 1 + (substr($code, 0, $_[0]) =~ tr/\n//) };
  while ($code =~ /spdlog::/g) {
    printf "logs: %s:%d: spdlog:: outside src/common/log.*: log through common/log.h\n",
      $file, $line_of->($-[0]);
  }
  next if $spdlog_only;
  while ($code =~ /\b(Log(?:Debug|Info|Warn|Error|Audit|AtSyslogLevel)?)\s*\(/g) {
    my ($name, $at, $after) = ($1, $-[0], $+[0]);
    my $rest = substr($code, $after);
    if ($name eq 'Log' || $name eq 'LogAtSyslogLevel') {
      # The level first: skip to the comma that ends it.
      next unless $rest =~ s/^\s*[^,()]*(?:\([^()]*\)[^,()]*)*,//;
    }
    next if $rest =~ /^\s*(?:$literal\s*)+[,)]/;
    printf "logs: %s:%d: %s(...): the message must be a string literal; put variables in fields\n",
      $file, $line_of->($at), $name;
  }
}
