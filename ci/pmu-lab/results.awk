# Reads one boot's serial console and prints one line per test: PASS, FAIL
# or SKIP, then "PMULAB_TOTAL passed failed skipped boot".
#
# Each test binary runs between init.sh's PMULAB_BEGIN/PMULAB_END markers,
# as libtest with --show-output: "test NAME ... ok|FAILED|ignored" lines,
# then the captured output of every test in "---- NAME stdout ----" blocks
# (successes and failures). A test whose output has a line starting with
# "SKIP" is a skip, except in the hardware test binary (hw-*), where nothing
# may skip: there it is a failure. A binary that exits non-zero without a
# failed test (a crash), or a boot that never reached PMULAB_DONE (timeout,
# kernel panic), is a failure too. In the "control" boot (the emulator bug a
# hardware test must detect) it is the other way round: the test's failure
# is the pass, and its pass a failure. PMULAB_SKIPBIN lines (binaries the lab
# does not run, with the reason) are skips.
function result(kind, what, why) {
  if (kind == "PASS") pass++
  else if (kind == "FAIL") fail++
  else skip++
  printf "%s %s %s%s\n", kind, boot, what, (why == "" ? "" : "  -- " why)
}
function flush_bin(rc,   i, t, k, nfail) {
  nfail = 0
  for (i = 1; i <= n; i++) {
    t = order[i]; k = st[t]
    if (boot == "control" && hw) {
      if (k == "FAILED") { result("PASS", bin "::" t " (negative control)", "fails under the emulator bug, as it must: " panicline[t]); nfail++ }
      else result("FAIL", bin "::" t " (negative control)", "did not fail under the emulator bug (" k "): it cannot tell the bug from working sampling")
      continue
    }
    if (k == "ok") {
      if (skipline[t] != "" && hw) { result("FAIL", bin "::" t, "skipped in the lab: " skipline[t]); nfail++ }
      else if (skipline[t] != "") result("SKIP", bin "::" t, skipline[t])
      else result("PASS", bin "::" t, "")
    } else if (k == "FAILED") { result("FAIL", bin "::" t, panicline[t]); nfail++ }
    else if (hw) { result("FAIL", bin "::" t, "ignored in the lab"); nfail++ }
    else result("SKIP", bin "::" t, "ignored")
  }
  if (rc != 0 && nfail == 0) result("FAIL", bin, "exited with status " rc " without a failed test")
  n = 0; delete order; delete st; delete skipline; delete panicline; block = ""
}
BEGIN { pass = fail = skip = 0; done = 0; n = 0; want_msg = "" }
{ sub(/\r$/, "") }
/^PMULAB_BEGIN / {
  bin = $2; sub(/.*\//, "", bin); hw = (bin ~ /^hw-/); sub(/-[0-9a-f]+$/, "", bin)
  inbin = 1; n = 0; block = ""; next
}
/^PMULAB_END / { rc = $3; sub(/^rc=/, "", rc); flush_bin(rc); inbin = 0; next }
/^PMULAB_SKIP(BIN|TEST) / { why = $0; sub(/^PMULAB_SKIP(BIN|TEST) [^ ]+ /, "", why); result("SKIP", $2, "not run in the guest: " why); next }
/^PMULAB_DONE/ { done = 1; next }
!inbin { next }
/^test .* \.\.\. (ok|FAILED|ignored)/ {
  t = $2; w = $4; sub(/,$/, "", w)
  if (!(t in st)) order[++n] = t
  st[t] = w; next
}
/^---- .* stdout ----$/ { block = $2; next }
/^(successes|failures):$/ { block = ""; next }
block != "" && /^SKIP[ :]/ && skipline[block] == "" { skipline[block] = $0 }
block != "" && /panicked at/ && panicline[block] == "" { panicline[block] = $0; want_msg = block; next }
# The panic message: the line after "panicked at".
want_msg != "" { if ($0 != "") panicline[want_msg] = panicline[want_msg] " " $0; want_msg = ""; next }
END {
  if (inbin) flush_bin(1)
  if (!done) result("FAIL", "boot", "the guest did not finish (timeout or kernel panic; see console-" boot ".log)")
  printf "PMULAB_TOTAL %d %d %d %s\n", pass, fail, skip, boot
}
