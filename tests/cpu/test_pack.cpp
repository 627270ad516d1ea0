// Packed run folders (harness/pack.h): records.jsonl and profiles.jsonl as <name>.gz read as before, pack and
// unpack round-trip byte for byte, and `convtune pack` / `unpack` / `export` through the CLI on a shipped run.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "harness/error.h"
#include "harness/json_file.h"
#include "harness/pack.h"
#include "harness/records.h"
#include "test_support.h"

using namespace convtune;
using convtune::test::contains;
using convtune::test::input_error;
namespace fs = std::filesystem;

namespace {

using test::kShipped;


using test::read_text;

json record(int k) {
  return {{"problem_key", "conv2d/h=8,r=1,w=8"}, {"candidate", "conv2d.naive[k=" + std::to_string(k) + "]"},
          {"status", "ok"}, {"time", {{"median_ms", 0.5 + k}}}, {"log", std::string(20000, 'x')}};  // long lines
}

// A run folder with 30 records, a torn last line and two profiles.
fs::path small_run(const std::string& name) {
  const fs::path run = test::fresh_temp_dir("pack-test-" + name);
  write_json_atomically(run / "summary.json", {{"schema", 1}});
  {
    RecordWriter records(run / "records.jsonl");
    for (int k = 0; k < 30; ++k) records.append(record(k));
    RecordWriter profiles(run / "profiles.jsonl");
    for (int k = 0; k < 2; ++k) profiles.append(record(k));
  }
  std::ofstream(run / "records.jsonl", std::ios::app) << R"({"problem_key": "p", "candid)";  // a crash mid-write
  return run;
}

// The exit status of `convtune <args>`, its stdout and stderr in `out`.
int convtune_cli(const std::string& args, std::string& out) {
  const fs::path log = fs::temp_directory_path() / ("convtune-pack-test-output-" + std::to_string(getpid()));
  const int rc = std::system((test::cli_binary() + " " + args + " > " + log.string() + " 2>&1").c_str());
  out = read_text(log);
  fs::remove(log);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace

TEST(Pack, RefusesAFolderThatIsNotARunNamingIt) {
  const fs::path dir = test::fresh_temp_dir("pack-test-not-a-run");
  EXPECT_TRUE(contains(input_error([&] { pack_run(dir); }), dir.string() + " is not a run folder"));
  EXPECT_TRUE(contains(input_error([&] { unpack_run(dir); }), dir.string() + " is not a run folder"));
  write_json_atomically(dir / "summary.json", {{"schema", 1}});
  EXPECT_TRUE(contains(input_error([&] { pack_run(dir); }), "no records.jsonl, nor records.jsonl.gz"));
  fs::remove_all(dir);
}

TEST(Records, ReadingAMissingFileNamesBothForms) {
  const fs::path dir = test::fresh_temp_dir("pack-test-missing");
  const std::string error = input_error([&] { read_records(dir / "records.jsonl"); });
  EXPECT_TRUE(contains(error, (dir / "records.jsonl").string())) << error;
  EXPECT_TRUE(contains(error, "records.jsonl.gz")) << error;
  fs::remove_all(dir);
}

#ifdef CONVTUNE_HAVE_ZLIB

TEST(Pack, PackedRecordsReadAsThePlainOnesAndUnpackByteForByte) {
  const fs::path run = small_run("roundtrip");
  const std::string records_text = read_text(run / "records.jsonl"), profiles_text = read_text(run / "profiles.jsonl");
  const ReadResult plain = read_records(run / "records.jsonl");
  ASSERT_EQ(plain.records.size(), 30u);
  ASSERT_EQ(plain.problems.size(), 1u);

  const auto packed = pack_run(run);
  ASSERT_EQ(packed.size(), 2u);
  EXPECT_EQ(packed[0].to, run / "records.jsonl.gz");
  EXPECT_LT(packed[0].to_bytes * 10, packed[0].from_bytes);
  EXPECT_FALSE(fs::exists(run / "records.jsonl"));
  EXPECT_FALSE(fs::exists(run / "profiles.jsonl"));
  EXPECT_FALSE(fs::exists(run / "records.jsonl.gz.tmp"));
  EXPECT_TRUE(is_packed(run));
  EXPECT_TRUE(records_file_exists(run / "records.jsonl"));
  EXPECT_EQ(stored_records_file(run / "records.jsonl"), run / "records.jsonl.gz");

  const ReadResult gz = read_records(run / "records.jsonl");
  EXPECT_EQ(gz.records, plain.records);
  ASSERT_EQ(gz.problems.size(), 1u);  // the torn last line, named in the .gz
  EXPECT_TRUE(contains(gz.problems[0], "records.jsonl.gz:31:")) << gz.problems[0];
  EXPECT_EQ(read_records(run / "profiles.jsonl").records.size(), 2u);

  const auto unpacked = unpack_run(run);
  ASSERT_EQ(unpacked.size(), 2u);
  EXPECT_FALSE(is_packed(run));
  EXPECT_FALSE(fs::exists(run / "records.jsonl.gz"));
  EXPECT_EQ(read_text(run / "records.jsonl"), records_text);
  EXPECT_EQ(read_text(run / "profiles.jsonl"), profiles_text);
  EXPECT_TRUE(unpack_run(run).empty());  // nothing left to unpack
  fs::remove_all(run);
}

TEST(Pack, PackingTwiceIsANoOp) {
  const fs::path run = small_run("twice");
  ASSERT_EQ(pack_run(run).size(), 2u);
  const std::string gz = read_text(run / "records.jsonl.gz");
  EXPECT_TRUE(pack_run(run).empty());
  EXPECT_EQ(read_text(run / "records.jsonl.gz"), gz);
  EXPECT_FALSE(fs::exists(run / "records.jsonl"));
  fs::remove_all(run);
}

// A pack cut short after its rename leaves both forms: readers take the plain file, and packing again
// finishes the job from it.
TEST(Pack, BothFormsThereReadThePlainOneAndPackAgain) {
  const fs::path run = small_run("both");
  const fs::path copy = test::fresh_temp_dir("pack-test-both-copy");
  fs::copy_file(run / "records.jsonl", copy / "records.jsonl");
  pack_run(run);
  fs::copy_file(copy / "records.jsonl", run / "records.jsonl");
  RecordWriter(run / "records.jsonl").append(record(99));  // appended after the cut-short pack
  EXPECT_FALSE(fs::exists(run / "profiles.jsonl"));
  EXPECT_EQ(read_records(run / "records.jsonl").records.size(), 31u);
  EXPECT_TRUE(is_packed(run));  // profiles.jsonl is there only as .gz
  const auto again = pack_run(run);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(read_records(run / "records.jsonl").records.size(), 31u);
  EXPECT_FALSE(fs::exists(run / "records.jsonl"));
  fs::remove_all(run);
  fs::remove_all(copy);
}

// A plain records.jsonl put beside a .gz it does not begin with would hide the packed records from every
// reader, and pack would replace them with it: both are refused, naming both files, and nothing changes.
TEST(Pack, BothFormsWhereThePlainOneLacksPackedRecordsAreRefused) {
  const fs::path run = small_run("lacking");
  pack_run(run);
  const std::string gz = read_text(run / "records.jsonl.gz");
  {
    RecordWriter fewer(run / "records.jsonl.new");
    for (int k = 0; k < 5; ++k) fewer.append(record(k));
  }
  fs::rename(run / "records.jsonl.new", run / "records.jsonl");
  const std::string plain = read_text(run / "records.jsonl");
  for (const std::string& error : {input_error([&] { read_records(run / "records.jsonl"); }),
                                   input_error([&] { pack_run(run); }), input_error([&] { unpack_run(run); })}) {
    EXPECT_TRUE(contains(error, "records.jsonl and ")) << error;
    EXPECT_TRUE(contains(error, "records.jsonl.gz both exist")) << error;
  }
  EXPECT_EQ(read_text(run / "records.jsonl.gz"), gz);
  EXPECT_EQ(read_text(run / "records.jsonl"), plain);
  fs::remove_all(run);
}

// An empty records file packs and unpacks as one (a run that recorded nothing yet), leaving no .tmp.
TEST(Pack, AnEmptyRecordsFileRoundTrips) {
  const fs::path run = test::fresh_temp_dir("pack-test-empty");
  write_json_atomically(run / "summary.json", {{"schema", 1}});
  std::ofstream(run / "records.jsonl").flush();
  ASSERT_EQ(pack_run(run).size(), 1u);
  EXPECT_TRUE(read_records(run / "records.jsonl").records.empty());
  ASSERT_EQ(unpack_run(run).size(), 1u);
  EXPECT_EQ(read_text(run / "records.jsonl"), "");
  for (const auto& entry : fs::directory_iterator(run))
    EXPECT_NE(entry.path().extension(), ".tmp") << entry.path();
  fs::remove_all(run);
}

TEST(Pack, RefusesARunASweepMayStillAppendTo) {
  const fs::path run = small_run("claims");
  fs::create_directories(run / "claims");
  EXPECT_TRUE(contains(input_error([&] { pack_run(run); }), "claims/"));
  EXPECT_TRUE(fs::exists(run / "records.jsonl"));
  fs::remove_all(run);
}

TEST(Pack, ACorruptGzipIsAnErrorNamingIt) {
  const fs::path run = small_run("corrupt");
  pack_run(run);
  const std::string gz = read_text(run / "records.jsonl.gz");
  std::ofstream(run / "records.jsonl.gz", std::ios::binary | std::ios::trunc) << gz.substr(0, gz.size() / 2);
  EXPECT_TRUE(contains(input_error([&] { read_records(run / "records.jsonl"); }), "records.jsonl.gz: not a readable gzip"));
  EXPECT_THROW(unpack_run(run), InputError);
  EXPECT_FALSE(fs::exists(run / "records.jsonl"));  // the truncated .gz was not unpacked
  fs::remove_all(run);
}

TEST(Pack, AGzNameOnAFileThatIsNotGzipIsAnError) {
  // zlib reads a file without the gzip header through as it is: an LFS pointer must not read as records.
  const fs::path run = small_run("notgzip");
  fs::rename(run / "records.jsonl", run / "records.jsonl.gz");
  EXPECT_TRUE(contains(input_error([&] { read_records(run / "records.jsonl"); }), "records.jsonl.gz: not a gzip file"));
  fs::remove_all(run);
}

TEST(Pack, AppendingToAPackedFileIsRefused) {
  // A new plain records.jsonl beside the .gz would hide it from every reader.
  const fs::path run = small_run("append");
  pack_run(run);
  EXPECT_TRUE(contains(input_error([&] { RecordWriter(run / "records.jsonl").append(record(0)); }), "unpack it first"));
  EXPECT_FALSE(fs::exists(run / "records.jsonl"));
  fs::remove_all(run);
}

// Through the CLI on a copy of a shipped run: pack, export from the packed folder (the same dispatch table
// and header as from the plain one), pack again, unpack (the same records.jsonl), and a folder that is not
// a run (exit 2, one line naming it).
TEST(PackCli, ExportOfAPackedRunIsTheExportOfThePlainOne) {
  const fs::path root = test::fresh_temp_dir("pack-test-cli");
  const fs::path plain = root / "plain/run", packed = root / "packed/run";
  for (const fs::path& to : {plain, packed}) {
    fs::create_directories(to);
    fs::copy(kShipped, to, fs::copy_options::recursive);
  }
  std::string out;
  ASSERT_EQ(convtune_cli("unpack " + plain.string(), out), 0) << out;  // in case the shipped run is packed
  ASSERT_EQ(convtune_cli("unpack " + packed.string(), out), 0) << out;
  ASSERT_EQ(convtune_cli("export " + plain.string(), out), 0) << out;
  EXPECT_TRUE(contains(out, "t4.json")) << out;  // every file it writes is named

  ASSERT_EQ(convtune_cli("pack " + packed.string(), out), 0) << out;
  EXPECT_TRUE(contains(out, "packed records.jsonl")) << out;
  EXPECT_FALSE(fs::exists(packed / "records.jsonl"));
  ASSERT_TRUE(fs::exists(packed / "records.jsonl.gz"));
  ASSERT_EQ(convtune_cli("export " + packed.string(), out), 0) << out;
  for (const char* name : {"dispatch.json", "convtune_dispatch.h", "t4.json"})
    EXPECT_EQ(read_text(packed / name), read_text(plain / name)) << name;

  ASSERT_EQ(convtune_cli("pack " + packed.string(), out), 0) << out;
  EXPECT_TRUE(contains(out, "already packed")) << out;
  ASSERT_EQ(convtune_cli("unpack " + packed.string(), out), 0) << out;
  EXPECT_EQ(read_text(packed / "records.jsonl"), read_text(plain / "records.jsonl"));
  EXPECT_FALSE(fs::exists(packed / "records.jsonl.gz"));

  // Every folder is checked before any is packed.
  EXPECT_EQ(convtune_cli("pack " + packed.string() + " " + root.string(), out), 2) << out;
  EXPECT_EQ(out, "convtune: pack: " + root.string() + " is not a run folder (no summary.json)\n");
  EXPECT_TRUE(fs::exists(packed / "records.jsonl"));
  fs::create_directories(plain / "claims");  // a run a sweep may still append to: refused before any packing
  EXPECT_EQ(convtune_cli("pack " + packed.string() + " " + plain.string(), out), 2) << out;
  EXPECT_TRUE(contains(out, "claims/")) << out;
  EXPECT_TRUE(fs::exists(packed / "records.jsonl"));
  fs::remove_all(root);
}

#else

TEST(Pack, WithoutZlibSaysHowToGetIt) {
  const fs::path run = small_run("nozlib");
  const std::string error = input_error([&] { pack_run(run); });
  EXPECT_TRUE(contains(error, "built without zlib (install zlib1g-dev and rebuild")) << error;
  EXPECT_TRUE(fs::exists(run / "records.jsonl"));
  fs::rename(run / "records.jsonl", run / "records.jsonl.gz");
  EXPECT_TRUE(contains(input_error([&] { read_records(run / "records.jsonl"); }), "gunzip"));
  fs::remove_all(run);
}

#endif
