// Checkpoints that change or lie: a file rewritten or truncated while it is mapped, a header
// whose size or keys are hostile, bytes after the last tensor, weights that are not finite.
// Each ends in one InputError naming the file and the tensor or field, never in a signal.
#include "core/base/error.hpp"
#include "core/base/mapped_file.hpp"
#include "core/models/gpt2/gpt2.hpp"
#include "core/models/loaded_model.hpp"
#include "core/models/safetensors.hpp"
#include "tests/input_errors.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

namespace attnviz::core {
namespace {

using namespace tinygpt2;
using testfs::errorOf;
using testfs::readFile;
using testfs::writeFile;

constexpr char kChanged[] = "model.safetensors: changed while it was read; open it again";

class CheckpointRewrittenWhileMapped : public testfs::TestFolder {
protected:
    void SetUp() override {
        TestFolder::SetUp();
        writeCheckpoint(m_dir, weights(5));
        m_weights = (m_dir / "model.safetensors").string();
    }
    std::vector<int> ids(const decoder::Checkpoint& model) const { return model.tokenizer().encode(" the then the"); }
    std::string m_weights;
};

// In a child process (a SIGBUS there ends the child, not the test): `body`'s InputError printed
// on stderr and exit code 2, as the command line reports it. The child set up its own `folder`
// and _Exit skips its TearDown, so it removes the folder itself.
template <class Body>
void exitWithError(const std::filesystem::path& folder, Body&& body) {
    int code = 0;
    try {
        body();
    } catch (const InputError& e) {
        std::fprintf(stderr, "attnviz: %s\n", e.message().c_str());
        code = 2;
    }
    std::error_code ec;
    std::filesystem::remove_all(folder, ec);
    std::_Exit(code);
}

TEST_F(CheckpointRewrittenWhileMapped, AReadPastAShrunkEndGetsZerosAndTheChangeIsKnown) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    // The mapping itself: three pages, the file cut to nothing, a read of the last page.
    EXPECT_EXIT(exitWithError(m_dir,
                              [&] {
                                  writeFile(m_weights, std::string(3 * 4096, 'x'));
                                  const int fd = ::open(m_weights.c_str(), O_RDONLY | O_CLOEXEC);
                                  const auto mapped = MappedFile::map(fd, 3 * 4096, m_weights);
                                  if (mapped->changed()) std::_Exit(3);
                                  ASSERT_EQ(::truncate(m_weights.c_str(), 0), 0);
                                  const auto last = static_cast<char>(mapped->bytes()[3 * 4096 - 1]);
                                  if (last != 0 || !mapped->changed()) std::_Exit(4);
                                  mapped->checkUnchanged();
                              }),
                ::testing::ExitedWithCode(2), kChanged);
    // A pass's kept run read again for one layer: its weights come from the file cut in half.
    EXPECT_EXIT(exitWithError(m_dir,
                              [&] {
                                  const auto model = gpt2::open(m_dir.string());
                                  const decoder::Run run = decoder::forward(*model, ids(*model));
                                  ASSERT_EQ(::truncate(m_weights.c_str(), static_cast<off_t>(std::filesystem::file_size(m_weights) / 2)),
                                            0);
                                  decoder::layerModel(*model, run, 1, {});
                              }),
                ::testing::ExitedWithCode(2), kChanged);
}

TEST_F(CheckpointRewrittenWhileMapped, TruncatedWhilePassesRunIsAnErrorNotASignal) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    // Another thread truncates the file while this one runs pass after pass: whether the cut
    // lands inside a pass or between two, the passes end in the error.
    EXPECT_EXIT(exitWithError(m_dir,
                              [&] {
                                  const auto model = gpt2::open(m_dir.string());
                                  std::atomic<int> passes{0};
                                  std::thread cutter([&] {
                                      while (passes < 3) std::this_thread::yield();
                                      ::truncate(m_weights.c_str(), 0);
                                  });
                                  struct Join {
                                      std::thread& t;
                                      ~Join() { t.join(); }
                                  } join{cutter};
                                  for (int i = 0; i < 1000000; ++i, ++passes) decoder::forward(*model, ids(*model));
                              }),
                ::testing::ExitedWithCode(2), kChanged);
}

TEST_F(CheckpointRewrittenWhileMapped, TheSameBytesCopiedOverAreAChangeAndOpeningAgainReadsThem) {
    const auto model = gpt2::open(m_dir.string());
    const decoder::Run before = decoder::forward(*model, ids(*model));
    // What `cp` does: truncate, then write (here the same bytes).
    const std::string bytes = readFile(m_weights);
    writeFile(m_weights, bytes);
    EXPECT_TRUE(model->changed());
    EXPECT_EQ(errorOf([&] { decoder::forward(*model, ids(*model)); }), m_dir.string() + "/" + kChanged);
    // A scenario naming the folder opens it again instead of reusing the changed checkpoint.
    Scenario s;
    s.model = m_dir.string();
    s.sentence = " the then the";
    LoadedModel stale;
    stale.checkpoint = model;
    const LoadedModel loaded = loadModel(s, &stale);
    EXPECT_NE(loaded.checkpoint, model);
    EXPECT_FALSE(loaded.checkpoint->changed());
    EXPECT_TRUE(loaded.run->logits.isApprox(before.logits, 0.0f));
    // Replaced by rename, the old file stays mapped and unchanged.
    writeFile(m_weights + ".new", bytes);
    std::filesystem::rename(m_weights + ".new", m_weights);
    EXPECT_FALSE(loaded.checkpoint->changed());
    EXPECT_EQ(errorOf([&] { decoder::forward(*loaded.checkpoint, ids(*loaded.checkpoint)); }), "(no error)");
}

// A header's entries, each a small F32 tensor of one element, and `after` appended to the data.
std::string manyEntries(std::size_t n, const std::string& repeated = "", std::size_t repeatAt = 0) {
    std::string header = "{", data;
    for (std::size_t i = 0; i < n; ++i) {
        const std::string name = i == repeatAt && !repeated.empty() ? repeated : "t." + std::to_string(i);
        header += (i ? ",\"" : "\"") + name + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" + std::to_string(4 * i) + "," +
                  std::to_string(4 * i + 4) + "]}";
        data.append(4, '\0');
    }
    header += "}";
    std::string out(8, '\0');
    const std::uint64_t length = header.size();
    std::memcpy(out.data(), &length, 8);
    return out + header + data;
}

std::span<const std::byte> asBytes(const std::string& s) { return {reinterpret_cast<const std::byte*>(s.data()), s.size()}; }

std::string headerError(const std::string& file) {
    return errorOf([&] { SafetensorsFile::fromBytes(asBytes(file), "w.safetensors"); });
}

TEST(HostileHeader, ARepeatedKeyIsNamedWhereverItIs) {
    // Every position of the repeat: the key repeated is the one named, never __metadata__.
    for (const std::size_t at : {1u, 2u, 5u, 11u, 12u}) {
        std::string file = manyEntries(13, "t.0", at);
        EXPECT_EQ(headerError(file), "w.safetensors: t.0: appears twice in the header") << at;
    }
    std::string file = manyEntries(13, "t.12", 3);
    EXPECT_EQ(headerError(file), "w.safetensors: t.12: appears twice in the header");
    // A field repeated inside an entry names the entry and the field.
    std::string field = manyEntries(3);
    const std::string entry = "\"t.1\":{\"dtype\":\"F32\",";
    field.replace(field.find(entry), entry.size(), "\"t.1\":{\"dtype\":\"F32\",\"dtype\":\"F16\",");
    std::uint64_t length = 0;
    std::memcpy(&length, field.data(), 8);
    length += 14;
    std::memcpy(field.data(), &length, 8);
    EXPECT_EQ(headerError(field), "w.safetensors: t.1: field 'dtype' appears twice");
}

TEST(HostileHeader, ManyEntriesOpenAndAreFoundByName) {
    // 200,000 entries: read in one pass and found by name (a header rescanned per entry takes
    // minutes here). The test asserts what was read, not how long it took.
    const SafetensorsFile f = SafetensorsFile::fromBytes(asBytes(manyEntries(200000)), "w.safetensors");
    ASSERT_EQ(f.tensors().size(), 200000u);
    ASSERT_NE(f.find("t.199999"), nullptr);
    EXPECT_EQ(f.find("t.199999")->begin, 4u * 199999u);
    EXPECT_EQ(f.find("t.77")->end, 4u * 78u);
    EXPECT_EQ(f.find("t.200000"), nullptr);
    EXPECT_EQ(f.find("t"), nullptr);
}

TEST(HostileHeader, BytesAfterTheLastTensorAreRefused) {
    EXPECT_EQ(headerError(manyEntries(3) + "x"),
              "w.safetensors: 1 bytes follow the last tensor's end (byte 12 of the data): a safetensors file's data ends where its last "
              "tensor does");
    std::string empty(8, '\0');
    empty[0] = 2;
    EXPECT_EQ(headerError(empty + "{}" + std::string(5, '\0')).substr(0, 30), "w.safetensors: 5 bytes follow ");
    EXPECT_EQ(headerError(empty + "{}"), "(no error)");
}

class HostileHeaderFile : public testfs::TestFolder {};

TEST_F(HostileHeaderFile, ASparseTailOfATerabyteIsRefusedWithoutReadingIt) {
    const auto path = m_dir / "model.safetensors";
    writeFile(path, manyEntries(4));
    std::filesystem::resize_file(path, std::filesystem::file_size(path) + (std::uintmax_t{1} << 40));  // sparse: no disk used
    EXPECT_EQ(errorOf([&] { SafetensorsFile::open(path.string()); }),
              path.string() + ": 1099511627776 bytes follow the last tensor's end (byte 16 of the data): a safetensors file's data ends " +
                  "where its last tensor does");
}

class NonFiniteWeights : public testfs::TestFolder {
protected:
    struct Edit {
        std::string tensor;
        std::size_t index;
        float value;
    };
    std::string passError(const std::vector<Edit>& edits) {
        auto w = weights(5);
        for (const Edit& e : edits) w[e.tensor].values.at(e.index) = e.value;
        writeCheckpoint(m_dir, w);
        return errorOf([&] {
            const auto model = gpt2::open(m_dir.string());
            decoder::forward(*model, model->tokenizer().encode(" the then the"));
        });
    }
    std::string passError(const std::string& tensor, std::size_t index, float value) { return passError({{tensor, index, value}}); }
    std::string file() const { return (m_dir / "model.safetensors").string(); }
};

TEST_F(NonFiniteWeights, ThePassNamesTheTensorAndTheIndex) {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(passError("ln_f.weight", 3, nan),
              file() + ": ln_f.weight: holds NaN at [3]: the checkpoint's weights must be finite (is the file damaged?)");
    // " the" is token 258: its row of wte, read by the first layer.
    EXPECT_EQ(passError("wte.weight", 258 * kEmbd + 2, nan),
              file() + ": wte.weight: holds NaN at [258, 2]: the checkpoint's weights must be finite (is the file damaged?)");
    // A row no token of the sentence reads still reaches the logits (wte is the output layer).
    EXPECT_EQ(passError("wte.weight", 7 * kEmbd, -inf),
              file() + ": wte.weight: holds -inf at [7, 0]: the checkpoint's weights must be finite (is the file damaged?)");
    EXPECT_EQ(passError("h.1.mlp.c_fc.weight", 4 * kEmbd * 3 + 5, nan),
              file() + ": h.1.mlp.c_fc.weight: holds NaN at [3, 5]: the checkpoint's weights must be finite (is the file damaged?)");
    EXPECT_EQ(passError("h.0.attn.c_attn.bias", 1, inf),
              file() + ": h.0.attn.c_attn.bias: holds +inf at [1]: the checkpoint's weights must be finite (is the file damaged?)");
    // Finite weights whose products overflow are an overflow, and say so.
    EXPECT_EQ(passError({{"h.0.attn.c_proj.bias", 0, 3e38f}, {"h.0.mlp.c_proj.bias", 0, 3e38f}}),
              "layer 0: the activations overflow the float range");
}

}  // namespace
}  // namespace attnviz::core
