-- mix.lua — the "iPhone app" traffic mix: 60% nearby departures, 25% stop
-- departures, 10% stop search, 5% trip detail.
--
-- Why it exists: what a transit app's users actually send, so one number
-- says how the service holds up under realistic load. Each thread draws its
-- own request list with these weights; the closing JSON line carries the
-- drawn counts per kind (request_list_kinds) so the weights can be checked.
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
local common = dofile(here .. "common.lua")

local MIX = {
  { kind = "departures", weight = 60 },
  { kind = "stop_departures", weight = 25 },
  { kind = "search", weight = 10 },
  { kind = "trip", weight = 5 },
}

local total_weight = 0
for _, m in ipairs(MIX) do
  total_weight = total_weight + m.weight
end

common.install("mix", function()
  local r = math.random() * total_weight
  for _, m in ipairs(MIX) do
    if r < m.weight then
      return common.paths[m.kind](), m.kind
    end
    r = r - m.weight
  end
  local last = MIX[#MIX]
  return common.paths[last.kind](), last.kind
end)
