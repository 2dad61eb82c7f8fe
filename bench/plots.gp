# Draws the benchmark's figures from the data files outbox-bench writes.
# Usage: gnuplot -e "datadir='DIR'; outdir='docs'" bench/plots.gp
if (!exists("datadir")) datadir = "."
if (!exists("outdir")) outdir = "."

set terminal pngcairo size 1200,520 font "DejaVu Sans,11" noenhanced
set datafile missing "NaN"
set grid ytics lc rgb "#dddddd"
set border 3
set tics nomirror

# Data rows in a file (0 when a stage did not run: --stages).
rows(f) = int(system("(grep -v '^#' '".f."' 2>/dev/null || true) | wc -l"))

# --- throughput: headline bars and the batch-size sweep ---------------------
if (rows(datadir."/throughput.dat") > 0) {
  set output outdir."/bench_throughput.png"
  set multiplot layout 1,2 title "Drain rate, 50,000 aggregates x 4 events (medians)"
  set title "batch_size 500"
  set style data histograms
  set style fill solid 0.8 border -1
  set boxwidth 0.7
  set ylabel "events/s"
  set yrange [0:*]
  set xtics rotate by -25 left
  unset key
  plot datadir."/headline.dat" using 2:xtic(1) lc rgb "#4477aa"
  set style fill empty
  set style data linespoints
  set title "by batch_size (one relay)"
  set xtics norotate center
  set logscale x 2
  set xlabel "batch_size"
  set key bottom right
  plot datadir."/throughput.dat" using 1:2 title "database limit (in-server)" lw 2 pt 7 lc rgb "#555555", \
       ""                         using 1:3 title "relay, ordering none" lw 2 pt 5 lc rgb "#4477aa", \
       ""                         using 1:4 title "relay, per_aggregate" lw 2 pt 9 lc rgb "#ee6677"
  unset logscale x
  unset xlabel
  unset multiplot
}

# --- latency distribution ------------------------------------------------------
if (rows(datadir."/latency_hist.dat") > 0) {
  load datadir."/latency_quantiles.txt"
  set output outdir."/bench_latency.png"
  set title sprintf("Latency insert -> broker at 1,000 events/s, default config (p50 %.1f ms, p99 %.1f ms, max %.1f ms)", p50, p99, max)
  set style data boxes
  set style fill transparent solid 0.5 noborder
  set boxwidth 1 absolute
  set xlabel "milliseconds (1 ms bins)"
  set ylabel "events"
  set logscale y
  set yrange [0.8:*]
  xmax = (max < 120 ? max + 5 : 125)
  set xrange [0:xmax]
  set key top right
  set arrow 1 from first 20, graph 0 to first 20, graph 1 nohead dt 2 lc rgb "#228833" lw 2
  set arrow 2 from first 100, graph 0 to first 100, graph 1 nohead dt 2 lc rgb "#cc3311" lw 2
  set label 1 "p50 target" at first 20.5, graph 0.55 tc rgb "#228833"
  set label 2 "p99 target" at first 100.5, graph 0.55 tc rgb "#cc3311"
  plot datadir."/latency_hist.dat" using ($1+0.5):2 title "insert -> received by a consumer (upper bound)" lc rgb "#4477aa", \
       ""                           using ($1+0.5):3 title "insert -> CreateTime (lower bound)" lc rgb "#ee6677"
  unset arrow 1
  unset arrow 2
  unset label 1
  unset label 2
  unset logscale y
  set yrange [*:*]
  set xrange [*:*]
}

# --- wake-up: poll and binlog over the offered rate --------------------------------
if (rows(datadir."/wakeup.dat") > 0) {
  set output outdir."/bench_wakeup.png"
  set terminal pngcairo size 1200,520 font "DejaVu Sans,11" noenhanced
  set multiplot layout 1,2 title "Wake-up: poll and binlog, one service, default poll_interval_ms (100), binary log on"
  unset arrow
  unset label
  set style data linespoints
  set xrange [*:*]
  set yrange [*:*]
  set logscale x 10
  set logscale y 10
  set xlabel "offered events/s"
  set key below horizontal
  set title "latency insert -> broker (upper bound)"
  set ylabel "milliseconds"
  # binlog's targets, for 1 to 100 events/s
  set arrow 3 from graph 0, first 10 to first 100, first 10 nohead dt 3 lc rgb "#228833" lw 2
  set arrow 4 from graph 0, first 25 to first 100, first 25 nohead dt 3 lc rgb "#cc3311" lw 2
  set label 3 "p50 target" at first 100, first 10 left offset 0.5,0 tc rgb "#228833"
  set label 4 "p99 target" at first 100, first 25 left offset 0.5,0 tc rgb "#cc3311"
  plot datadir."/wakeup.dat" using 1:2 title "poll p50" lw 2 pt 7 lc rgb "#4477aa", \
       ""                    using 1:3 title "poll p99" lw 2 pt 5 dt 2 lc rgb "#4477aa", \
       ""                    using 1:6 title "binlog p50" lw 2 pt 7 lc rgb "#ee6677", \
       ""                    using 1:7 title "binlog p99" lw 2 pt 5 dt 2 lc rgb "#ee6677"
  unset arrow 3
  unset arrow 4
  unset label 3
  unset label 4
  set title "the relay's statements per second"
  set ylabel "statements/s"
  plot datadir."/wakeup.dat" using 1:5 title "poll" lw 2 pt 7 lc rgb "#4477aa", \
       ""                    using 1:9 title "binlog" lw 2 pt 7 lc rgb "#ee6677"
  unset multiplot
  unset logscale x
  unset logscale y
  unset xlabel
}

# --- RSS while draining a large backlog ------------------------------------------
if (rows(datadir."/rss.dat") > 0) {
  set output outdir."/bench_rss.png"
  set terminal pngcairo size 900,420 font "DejaVu Sans,11" noenhanced
  set title "Relay RSS while draining a 1,000,000-event backlog (per_aggregate)"
  set style data lines
  set xlabel "events published"
  set ylabel "VmRSS, MiB"
  set yrange [0:*]
  set format x "%.0s%c"
  unset key
  plot datadir."/rss.dat" using 2:3 lw 2 lc rgb "#4477aa"
}
