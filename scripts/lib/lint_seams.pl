#!/usr/bin/perl
# scripts/lint's "seams" check (one kind of lock, one source of
# time): prints one line per violation in the files given, "seams:
# FILE:LINE: what". The caller leaves src/common/ out, where the seams live.
#  - a standard lock, condition variable or lock holder (std::mutex,
#    std::shared_mutex, std::condition_variable, std::lock_guard, ...): use
#    Mutex / SharedMutex / CondVar / MutexLock (common/mutex.h), which clang's
#    thread-safety analysis understands;
#  - a direct clock read (steady_clock::now(), system_clock::now(), through
#    an alias too: any `::now()`), an alias of a standard clock, or a C time
#    call (time(), clock_gettime, gettimeofday): read Clock (common/clock.h);
#  - a call of a test seam (`x.FooForTesting(`, `x->FooForTesting(`): a
#    method that exists for tests says so in its name, and production code
#    never calls it.
# Comments and the contents of string literals are ignored.
use strict;
use warnings;

my @rules = (
  [qr/\bstd::(?:recursive_|timed_|recursive_timed_|shared_|shared_timed_)?mutex\b/,
   'a standard mutex: use Mutex or SharedMutex (common/mutex.h)'],
  [qr/\bstd::condition_variable(?:_any)?\b/, 'a standard condition variable: use CondVar (common/mutex.h)'],
  [qr/\bstd::(?:lock_guard|unique_lock|scoped_lock|shared_lock)\b/,
   'a standard lock holder: use MutexLock, ReaderMutexLock or WriterMutexLock (common/mutex.h)'],
  [qr/::\s*now\s*\(/, 'a direct clock read: use Clock::Now (common/clock.h)'],
  [qr/\b(?:using\s+\w+\s*=|typedef)\s*(?:std::)?(?:chrono::)?(?:steady|system|high_resolution|utc|tai|gps|file)_clock\s*;/,
   'an alias of a standard clock: use Clock (common/clock.h)'],
  [qr/(?<![\w:.>])(?:std::)?(?:time\s*\(\s*(?:nullptr|NULL|0)\s*\)|clock_gettime\s*\(|gettimeofday\s*\()/,
   'a C time call: use Clock (common/clock.h)'],
  [qr/(?:\.|->)\s*\w+ForTesting\s*\(/, 'a test seam (...ForTesting) called from production code'],
);

for my $file (@ARGV) {
  open(my $fh, '<', $file) or die "lint_seams: $file: $!\n";
  my $text = do { local $/; <$fh> };
  close $fh;
  # Blank out comments and string contents, keeping every newline.
  my $code = $text;
  $code =~ s{("(?:[^"\\\n]|\\.)*")|(//[^\n]*)|(/\*.*?\*/)}{
    defined $1 ? '"' . ('x' x (length($1) - 2)) . '"'
               : do { (my $c = ($2 // $3)) =~ s/[^\n]/ /g; $c } }gse;
  my $line_of = sub { 1 + (substr($code, 0, $_[0]) =~ tr/\n//) };
  for my $rule (@rules) {
    my ($re, $what) = @$rule;
    while ($code =~ /$re/g) { printf "seams: %s:%d: %s\n", $file, $line_of->($-[0]), $what; }
  }
}
