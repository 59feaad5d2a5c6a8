--[[
SCO admission for Slurm (ADR-04): no contract, no reclaimable placement.

Install next to slurm.conf with `JobSubmitPlugins=lua`, then `scontrol reconfigure`. The published contracts
are read from the data file `sco-admission.txt` in the same directory, written by
`sco contracts sync-admission --bundle <controller-bundle.json> --key <pub.pem> --lua-out <dir>/sco-admission.txt`
from a verified bundle (format: docs/admission.md):

  # comment lines
  reclaimable_partition <name>        (one line per reclaimable partition)
  contract <workload>@<version>       (one line per published contract version)

A job whose partition list names a reclaimable partition (or that falls to a reclaimable default partition)
must carry `--comment=contract=<name>@<version>` naming a published contract version. Fails closed: when the
data file cannot be read, every job for a partition listed below in FALLBACK_RECLAIMABLE is refused.
Guaranteed partitions are never affected. Jobs are also checked when modified (partition or comment).
]]

local DATA_FILE_NAME = "sco-admission.txt"
-- Partitions treated as reclaimable when the data file is missing or unreadable (fail closed).
local FALLBACK_RECLAIMABLE = { reclaimable = true }
local EXPECTED_FORM = "--comment=contract=<name>@<version>"

local function script_dir()
   local src = debug.getinfo(1, "S").source
   if src:sub(1, 1) == "@" then src = src:sub(2) end
   return src:match("^(.*)/[^/]*$") or "."
end

local DATA_PATH = script_dir() .. "/" .. DATA_FILE_NAME

-- Returns reclaimable set, contract set, error message (nil when the file was read).
local function load_data()
   local fh = io.open(DATA_PATH, "r")
   if fh == nil then
      return FALLBACK_RECLAIMABLE, {}, "no admission data at " .. DATA_PATH
   end
   local reclaimable, contracts, any_partition = {}, {}, false
   for line in fh:lines() do
      local key, value = line:match("^%s*([%w_]+)%s+(%S+)%s*$")
      if key == "reclaimable_partition" then
         reclaimable[value] = true
         any_partition = true
      elseif key == "contract" then
         contracts[value] = true
      end
   end
   fh:close()
   if not any_partition then
      return FALLBACK_RECLAIMABLE, contracts, nil
   end
   return reclaimable, contracts, nil
end

local function split_list(value)
   local out = {}
   if value == nil then return out end
   for item in string.gmatch(value, "[^,]+") do
      out[#out + 1] = item:match("^%s*(.-)%s*$")
   end
   return out
end

-- The contract named in a job comment: "contract=<name>@<version>" among ','/';'-separated tokens.
local function contract_from_comment(comment)
   if comment == nil then return nil end
   for token in string.gmatch(comment, "[^,;]+") do
      local value = token:match("^%s*contract%s*=%s*(%S+)%s*$")
      if value ~= nil then return value end
   end
   return nil
end

local function default_partition(part_list)
   for _, part in pairs(part_list or {}) do
      if part.flag_default == 1 or part.flag_default == true then return part.name end
   end
   return nil
end

-- Returns nil when admitted, else the message for the user.
local function check(partition_value, comment, part_list)
   local reclaimable, contracts, data_error = load_data()
   local targets = split_list(partition_value)
   if #targets == 0 then
      local default = default_partition(part_list)
      if default ~= nil then targets = { default } end
   end
   local hit = nil
   for _, name in ipairs(targets) do
      if reclaimable[name] then hit = name break end
   end
   if hit == nil then return nil end
   if data_error ~= nil then
      return string.format("sco: reclaimable partition %s is closed: %s (the contract bundle sync failed; "
         .. "ask the platform team)", hit, data_error)
   end
   local contract = contract_from_comment(comment)
   if contract == nil then
      return string.format("sco: jobs on reclaimable partition %s need an interruption contract: submit with "
         .. "%s naming a published contract version (ADR-04)", hit, EXPECTED_FORM)
   end
   if not contract:match("^[%w%-]+@%d+$") then
      return string.format("sco: contract %q is malformed; expected %s", contract, EXPECTED_FORM)
   end
   if not contracts[contract] then
      local name = contract:match("^(.-)@")
      local known = {}
      for c, _ in pairs(contracts) do
         if c:match("^(.-)@") == name then known[#known + 1] = c end
      end
      table.sort(known)
      local hint = #known > 0 and (" (published: " .. table.concat(known, ", ") .. ")") or ""
      return string.format("sco: contract %s is not published for this cluster%s; use %s with a published "
         .. "version", contract, hint, EXPECTED_FORM)
   end
   return nil
end

function slurm_job_submit(job_desc, part_list, submit_uid)
   local message = check(job_desc.partition, job_desc.comment, part_list)
   if message ~= nil then
      slurm.log_user(message)
      slurm.log_info("sco job_submit: refused uid %s: %s", tostring(submit_uid), message)
      return slurm.ESLURM_ACCESS_DENIED
   end
   return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
   if job_desc.partition == nil and job_desc.comment == nil then
      return slurm.SUCCESS
   end
   local partition = job_desc.partition or (job_rec and job_rec.partition)
   local comment = job_desc.comment or (job_rec and job_rec.comment)
   local message = check(partition, comment, part_list)
   if message ~= nil then
      -- scontrol update (22.05) shows only "Access/permission denied"; the reason goes to slurmctld's log.
      slurm.log_user(message)
      slurm.log_info("sco job_modify: refused job %s uid %s: %s", tostring(job_rec and job_rec.job_id),
         tostring(modify_uid), message)
      return slurm.ESLURM_ACCESS_DENIED
   end
   return slurm.SUCCESS
end

slurm.log_info("sco job_submit.lua loaded (data %s)", DATA_PATH)
return slurm.SUCCESS
