-- baseline.lua — one fixed path, for the baselines (hello_mhd and nginx).
--
-- Why it exists: the baselines are measured with exactly the same wrk
-- settings and the same Lua callbacks (per-thread request list, failures
-- counted by wrk, the JSON line from done()) as the transitd scripts, so
-- the ratio compares servers, not client overheads. The path comes from
-- $TRANSITD_BENCH_PATH (default "/").
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
local common = dofile(here .. "common.lua")

local path = os.getenv("TRANSITD_BENCH_PATH")
if not path or path == "" then
  path = "/"
end
common.install("baseline", function()
  return path
end)
