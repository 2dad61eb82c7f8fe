# Draws the soak's resource lines from the data files outbox-soak writes
# (--report-dir). Usage: gnuplot -e "datadir='DIR'; outdir='docs'" tests/soak/soak.gp
if (!exists("datadir")) datadir = "."
if (!exists("outdir")) outdir = "."

set terminal pngcairo size 1200,900 font "DejaVu Sans,11" noenhanced
set output outdir."/soak.png"
set datafile missing "NaN"
set grid ytics lc rgb "#dddddd"
set border 3
set tics nomirror
set style data lines
set key top left
set xlabel "minutes"

# Each fault as a shaded band with its number (faults.dat: start end label).
nfaults = int(system("(grep -v '^#' '".datadir."/faults.dat' 2>/dev/null || true) | wc -l"))
do for [i=1:nfaults] {
  s = real(system("grep -v '^#' '".datadir."/faults.dat' | sed -n ".i."p | cut -d' ' -f1"))
  e = real(system("grep -v '^#' '".datadir."/faults.dat' | sed -n ".i."p | cut -d' ' -f2"))
  set object i rect from s, graph 0 to e + 0.05, graph 1 fc rgb "#ffdddd" fs solid 0.5 noborder behind
  set label i sprintf("%d", i) at s, graph 0.97 font ",9" tc rgb "#aa3333"
}

set multiplot layout 3,1 title "Soak: the relay process's resources, sampled every 10 s (faults shaded)"
set ylabel "RSS, MiB"
set yrange [0:*]
plot datadir."/soak.dat" using 1:2 title "VmRSS" lw 2 lc rgb "#4477aa"
set ylabel "count"
plot datadir."/soak.dat" using 1:3 title "open FDs" lw 2 lc rgb "#4477aa", \
     ""                  using 1:4 title "threads" lw 2 lc rgb "#228833", \
     ""                  using 1:5 title "database connections (both servers)" lw 2 lc rgb "#ee6677"
set ylabel "rows"
plot datadir."/soak.dat" using 1:6 title "backlog (NEW + SENDING)" lw 2 lc rgb "#aa7733"
unset multiplot
