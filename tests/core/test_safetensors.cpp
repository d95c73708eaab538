// The safetensors reader: files written here byte by byte, the values read back against numbers
// worked out by hand, every hostile header refused with one bounded line naming the file and the
// tensor, and half / bfloat16 against a reference built from the bit fields with ldexp.
#include "core/base/error.hpp"
#include "core/models/safetensors.hpp"
#include "tests/test_folder.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <sys/stat.h>

using namespace attnviz::core;
using attnviz::testfs::writeFile;
using nlohmann::json;

namespace {

// A safetensors file: the 8-byte little-endian length of `header`, `header`, then `data`.
std::string stFile(const std::string& header, const std::string& data = "") {
    std::string out(8, '\0');
    const std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
    return out + header + data;
}

// The header as Hugging Face writes it: padded with spaces so that the data starts on 8 bytes.
std::string padded(const json& header) {
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    return text;
}

json entry(const std::string& dtype, const std::vector<std::int64_t>& shape, std::uint64_t begin, std::uint64_t end) {
    return {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {begin, end}}};
}

// Little-endian bytes of each value.
template <class T>
std::string raw(const std::vector<T>& values) {
    std::string out(values.size() * sizeof(T), '\0');
    if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
    return out;
}

std::span<const std::byte> asBytes(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }

// The message of the InputError that reading `bytes` as "w.safetensors" throws ("" if none).
std::string errorOf(const std::string& bytes) {
    try {
        SafetensorsFile::fromBytes(asBytes(bytes), "w.safetensors");
    } catch (const InputError& e) {
        return e.message();
    }
    return "";
}

// One line, bounded, naming the file and (when given) the tensor, and holding `fragment`.
void expectRefused(const std::string& bytes, const std::string& fragment, const std::string& tensor = "") {
    const std::string m = errorOf(bytes);
    EXPECT_NE(m.find(fragment), std::string::npos) << "message: " << m << "\nexpected: " << fragment;
    EXPECT_EQ(m.rfind("w.safetensors: ", 0), 0u) << m;
    if (!tensor.empty()) {
        EXPECT_NE(m.find("w.safetensors: " + tensor + ": "), std::string::npos) << m;
    }
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_LT(m.size(), 600u) << m;
}

std::vector<float> floatsOf(const SafetensorsFile& f, const std::string& name) {
    const TensorInfo* t = f.find(name);
    EXPECT_NE(t, nullptr) << name;
    if (!t) return {};
    std::vector<float> out(static_cast<std::size_t>(t->elements()));
    f.toFloats(*t, out.data());
    return out;
}

}  // namespace

TEST(Safetensors, FloatTypesRoundTripToKnownValues) {
    json h;
    h["f32"] = entry("F32", {2, 2}, 0, 16);
    h["f16"] = entry("F16", {7}, 16, 30);
    h["bf16"] = entry("BF16", {4}, 30, 38);
    h["f64"] = entry("F64", {3}, 38, 62);
    const std::string data = raw<float>({1.5f, -2, 3.25f, 1e-3f}) +
                             raw<std::uint16_t>({0x3C00, 0xC000, 0x0001, 0x7C00, 0xFC00, 0x7BFF, 0x3555}) +
                             raw<std::uint16_t>({0x3F80, 0xC040, 0x7F80, 0x0001}) + raw<double>({0.1, -1e300, 2.5});
    const std::string bytes = stFile(padded(h), data);
    const SafetensorsFile f = SafetensorsFile::fromBytes(asBytes(bytes), "m.safetensors");
    EXPECT_EQ(f.fileBytes(), bytes.size());

    EXPECT_EQ(floatsOf(f, "f32"), (std::vector<float>{1.5f, -2, 3.25f, 1e-3f}));
    const float inf = std::numeric_limits<float>::infinity();
    // 1, -2, the smallest subnormal 2^-24, ±inf, the largest half 65504, 1365 / 4096
    EXPECT_EQ(floatsOf(f, "f16"), (std::vector<float>{1, -2, std::ldexp(1.0f, -24), inf, -inf, 65504, 0.333251953125f}));
    EXPECT_EQ(floatsOf(f, "bf16"), (std::vector<float>{1, -3, inf, std::ldexp(1.0f, -133)}));
    EXPECT_EQ(floatsOf(f, "f64"), (std::vector<float>{0.1f, -inf, 2.5f}));

    const TensorInfo* t = f.find("f32");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->dtype, DType::F32);
    EXPECT_EQ(t->shape, (std::vector<std::int64_t>{2, 2}));
    EXPECT_EQ(t->elements(), 4);
    EXPECT_STREQ(dtypeName(DType::BF16), "BF16");
    EXPECT_EQ(dtypeBytes(DType::F64), 8u);
    EXPECT_FALSE(isFloatDType(DType::I64));
}

TEST(Safetensors, PaddedHeaderMetadataFindAndBytes) {
    json h;
    h["__metadata__"] = {{"format", "pt"}, {"note", "ünïcode"}};
    h["z"] = entry("F32", {1}, 0, 4);  // first in the data, last by name
    h["a"] = entry("I64", {1}, 4, 12);
    h["e"] = entry("F16", {0, 3}, 4, 4);  // empty: may sit where another tensor starts
    h["s"] = entry("U8", {}, 12, 13);     // a scalar holds one element
    const std::string bytes = stFile(h.dump() + std::string(5, ' '), raw<float>({7}) + raw<std::int64_t>({-5}) + "\x2A");
    const SafetensorsFile f = SafetensorsFile::fromBytes(asBytes(bytes), "m.safetensors");

    EXPECT_EQ(f.metadata(), (std::map<std::string, std::string>{{"format", "pt"}, {"note", "ünïcode"}}));
    std::vector<std::string> order;
    for (const TensorInfo& t : f.tensors()) order.push_back(t.name);
    EXPECT_EQ(order, (std::vector<std::string>{"z", "e", "a", "s"}));
    EXPECT_EQ(f.find("nope"), nullptr);
    EXPECT_EQ(f.find("__metadata__"), nullptr);
    const TensorInfo* a = f.find("a");
    ASSERT_NE(a, nullptr);
    const auto b = f.bytes(*a);
    std::int64_t v = 0;
    ASSERT_EQ(b.size(), 8u);
    std::memcpy(&v, b.data(), 8);
    EXPECT_EQ(v, -5);
    EXPECT_EQ(f.find("s")->elements(), 1);
    EXPECT_EQ(static_cast<unsigned char>(f.bytes(*f.find("s"))[0]), 42u);
    EXPECT_EQ(f.find("e")->elements(), 0);
    EXPECT_EQ(f.floatsInPlace(*a), nullptr);  // not F32
    // Huge dimensions beside a zero hold nothing, in any order.
    json zero;
    zero["t"] = entry("F32", {std::int64_t{1} << 40, std::int64_t{1} << 40, 0}, 0, 0);
    const std::string zeroBytes = stFile(zero.dump());
    EXPECT_EQ(SafetensorsFile::fromBytes(asBytes(zeroBytes), "z").tensors().at(0).elements(), 0);
}

// A duplicate name: nlohmann would keep the last silently.
TEST(Safetensors, KeysTwiceAreRefused) {
    expectRefused(stFile(R"({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},)"
                         R"( "a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}})",
                         "xy"),
                  "appears twice in the header", "a");
    expectRefused(stFile(R"({"a": {"dtype": "U8", "dtype": "F32", "shape": [1], "data_offsets": [0, 1]}})", "x"),
                  "field 'dtype' appears twice", "a");
    expectRefused(stFile(R"({"a": {"": 1, "": 2}})"), "field '' appears twice", "a");
}

class SafetensorsFiles : public attnviz::testfs::TestFolder {
protected:
    std::string errorOfPath(const std::string& path) {
        try {
            SafetensorsFile::open(path);
        } catch (const InputError& e) {
            return e.message();
        }
        return "";
    }
};

TEST_F(SafetensorsFiles, MappedFileAndAlignment) {
    // 8 + 56 header bytes: the data starts on 8 bytes of a page-aligned mapping. "odd" begins
    // at byte 2 of the data, where a float may not be read in place.
    json h;
    h["even"] = entry("F32", {2}, 4, 12);
    h["odd"] = entry("F32", {1}, 14, 18);
    std::string header = padded(h);
    ASSERT_EQ((8 + header.size()) % 4, 0u);
    std::string data = raw<std::uint16_t>({0, 0}) + raw<float>({0.5f, -4}) + raw<std::uint16_t>({0}) + raw<float>({9});
    const std::string file = path("m.safetensors").string();
    writeFile(file, stFile(header, data));

    SafetensorsFile moved = SafetensorsFile::open(file);
    const SafetensorsFile f = std::move(moved);  // the mapping moves with it
    EXPECT_EQ(f.path(), file);
    const float* even = f.floatsInPlace(*f.find("even"));
    ASSERT_NE(even, nullptr);
    EXPECT_EQ(even[0], 0.5f);
    EXPECT_EQ(even[1], -4);
    EXPECT_EQ(f.floatsInPlace(*f.find("odd")), nullptr);
    EXPECT_EQ(floatsOf(f, "odd"), (std::vector<float>{9}));  // copied instead
}

TEST_F(SafetensorsFiles, ReleasedPagesAreReadAgainFromTheFile) {
    // A tensor over several pages, and a neighbour sharing its last page.
    std::vector<float> big(5000), small = {7.0f, 8.0f};
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i) * 0.25f;
    json h;
    h["big"] = entry("F32", {5000}, 0, 20000);
    h["small"] = entry("F32", {2}, 20000, 20008);
    const std::string file = path("big.safetensors").string();
    writeFile(file, stFile(padded(h), raw<float>(big) + raw<float>(small)));
    const SafetensorsFile f = SafetensorsFile::open(file);
    EXPECT_EQ(floatsOf(f, "big"), big);
    f.release(*f.find("big"));
    EXPECT_EQ(floatsOf(f, "big"), big);
    EXPECT_EQ(floatsOf(f, "small"), small);
    const float* inPlace = f.floatsInPlace(*f.find("big"));
    ASSERT_NE(inPlace, nullptr);
    EXPECT_EQ(inPlace[4999], 4999 * 0.25f);
}

TEST_F(SafetensorsFiles, WhatIsNotAFileIsRefusedAtOnce) {
    const std::string missing = path("missing.safetensors").string();
    EXPECT_EQ(errorOfPath(missing), missing + ": no such file");
    EXPECT_EQ(errorOfPath(m_dir.string()), m_dir.string() + ": is a directory, expected a safetensors file");
    const std::string fifo = path("pipe.safetensors").string();
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_EQ(errorOfPath(fifo), fifo + ": is not a regular file (a pipe or a device cannot be mapped)");  // not a wait for a writer
    const std::string empty = path("empty.safetensors").string();
    writeFile(empty, "");
    EXPECT_EQ(errorOfPath(empty), empty + ": is empty, expected a safetensors file (8-byte header length, header, data)");
    const std::string shortFile = path("short.safetensors").string();
    writeFile(shortFile, "abc");
    EXPECT_EQ(errorOfPath(shortFile), shortFile + ": truncated: 3 bytes, shorter than the 8-byte header length");
}

TEST(Safetensors, HostileHeadersAreRefusedWithOneLine) {
    const auto one = [](const std::string& body, const std::string& data = std::string(16, '\0')) {
        return stFile(R"({"t": )" + body + "}", data);
    };
    expectRefused("abcde", "truncated: 5 bytes, shorter than the 8-byte header length");
    expectRefused(stFile(std::string(100, ' ')).substr(0, 8) + "{}" + std::string(8, ' '),
                  "truncated: header length 100 runs past the end of the file (18 bytes)");
    std::string huge(8, '\0');
    const std::uint64_t over = SafetensorsFile::kMaxHeaderBytes + 1;
    std::memcpy(huge.data(), &over, 8);
    expectRefused(huge + "{}", "header length 104857601 is over the limit of 100 MiB");
    expectRefused(stFile("hello"),
                  "header is not JSON: parse error at line 1, column 1: syntax error while parsing value - invalid literal");
    // Garbage after the JSON; NUL bytes for padding (nlohmann would stop reading at the first).
    expectRefused(stFile("{} x"),
                  "header is not JSON: parse error at line 1, column 4: syntax error while parsing value - invalid literal; "
                  "expected end of input");
    expectRefused(stFile(std::string("{}\0\0", 4)), "header is not JSON: a NUL byte at byte 2 of the header");
    expectRefused(stFile(std::string("{}\0 x", 5)), "a NUL byte at byte 2");
    expectRefused(stFile("{\"a\xFF\": 1}"), "header is not JSON");  // not UTF-8
    // nlohmann's "last read: '…'" (here 10,000 x) is not repeated.
    expectRefused(stFile("{\"" + std::string(10000, 'x')), "header is not JSON");
    EXPECT_EQ(errorOf(stFile("{\"" + std::string(10000, 'x'))).find("xxx"), std::string::npos);
    expectRefused(stFile(R"({"t": 1)" + std::string(10000, '0') + "}"), "header is not JSON: number overflow parsing '10000");
    expectRefused(stFile("[1, 2]"), "header is an array of 2 items, expected a JSON object");
    expectRefused(stFile(R"({"": {}})"), "a tensor has an empty name");
    expectRefused(stFile(R"({"t": 3})"), "is 3, expected an object with dtype, shape and data_offsets", "t");
    expectRefused(one(R"({"shape": [1], "data_offsets": [0, 4]})"), "no dtype", "t");
    expectRefused(one(R"({"dtype": 4, "shape": [1], "data_offsets": [0, 4]})"), "dtype is 4, expected a string", "t");
    expectRefused(one(R"({"dtype": "F33", "shape": [1], "data_offsets": [0, 4]})"), "unknown dtype 'F33'", "t");
    expectRefused(one(R"({"dtype": ")" + std::string(10000, 'Q') + R"(", "shape": [1], "data_offsets": [0, 4]})"), "unknown dtype 'QQQ",
                  "t");
    expectRefused(one(R"({"dtype": "F32", "data_offsets": [0, 4]})"), "no shape", "t");
    expectRefused(one(R"({"dtype": "F32", "shape": 4, "data_offsets": [0, 4]})"), "shape is 4, expected an array", "t");
    expectRefused(one(R"({"dtype": "F32", "shape": [2, -1], "data_offsets": [0, 4]})"), "shape[1] is -1, expected a non-negative integer",
                  "t");
    expectRefused(one(R"({"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]})"), "shape[0] is 1.5, expected a non-negative integer",
                  "t");
    expectRefused(one(R"({"dtype": "F32", "shape": ["2"], "data_offsets": [0, 4]})"), "shape[0] is the text '2'", "t");
    expectRefused(one(R"({"dtype": "F32", "shape": [1,1,1,1,1,1,1,1,1], "data_offsets": [0, 4]})"), "shape has 9 dimensions, more than 8",
                  "t");
    expectRefused(one(R"({"dtype": "F32", "shape": [1]})"), "no data_offsets", "t");
    expectRefused(one(R"({"dtype": "F32", "shape": [1], "data_offsets": [0]})"),
                  "data_offsets is an array of 1 item, expected [begin, end]", "t");
    expectRefused(one(R"({"dtype": "F32", "shape": [1], "data_offsets": [0, 4, 8]})"), "expected [begin, end]", "t");
    expectRefused(one(R"({"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]})"), "data_offsets must be two non-negative integers", "t");
    expectRefused(one(R"({"dtype": "F32", "shape": [0], "data_offsets": [8, 4]})"), "data_offsets [8, 4]: begin is after end", "t");
    expectRefused(one(R"({"dtype": "F32", "shape": [5], "data_offsets": [0, 20]})"),
                  "truncated: data_offsets [0, 20] run past the end of the data (16 bytes)", "t");
    expectRefused(one(R"({"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 16]})"),
                  "shape [2, 3] of F32 takes 24 bytes, but data_offsets [0, 16] span 16", "t");
    expectRefused(one(R"({"dtype": "F32", "shape": [1099511627776, 1099511627776], "data_offsets": [0, 16]})"),
                  "shape [1099511627776, 1099511627776] is too large: its byte count overflows 64 bits", "t");
    expectRefused(stFile(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                         R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                         std::string(12, '\0')),
                  "data_offsets [4, 12] overlap tensor 'a' at [0, 8]", "b");
    expectRefused(stFile(R"({"__metadata__": [1]})"), "__metadata__: is an array of 1 item, expected an object of strings");
    expectRefused(stFile(R"({"__metadata__": {"format": 1}})"), "__metadata__: format: is 1, expected a string");

    // A 10 kB tensor name: the message keeps the file and the name's start, and stays short.
    const std::string longName(10000, 'n');
    const std::string m = errorOf(stFile(R"({")" + longName + R"(": {"dtype": "F33"}})"));
    EXPECT_EQ(m.rfind("w.safetensors: nnnn", 0), 0u) << m;
    EXPECT_NE(m.find("unknown dtype 'F33'"), std::string::npos) << m;
    EXPECT_LT(m.size(), 600u);
    // A newline in a name stays escaped on one line.
    expectRefused(stFile("{\"a\\nb\": 1}"), "w.safetensors: a\\nb: is 1");
}

TEST(Safetensors, ToFloatsRefusesIntegerTensors) {
    json h;
    h["ids"] = entry("I64", {2}, 0, 16);
    const std::string bytes = stFile(padded(h), std::string(16, '\0'));
    const SafetensorsFile f = SafetensorsFile::fromBytes(asBytes(bytes), "w.safetensors");
    std::vector<float> out(2);
    try {
        f.toFloats(*f.find("ids"), out.data());
        FAIL() << "no error";
    } catch (const InputError& e) {
        EXPECT_EQ(e.message(), "w.safetensors: ids: dtype I64 is not a float type");
    }
}

// Every half and every bfloat16 against values built from their bit fields with ldexp.
TEST(Safetensors, HalfAndBfloat16AreExactForEveryBitPattern) {
    for (std::uint32_t b = 0; b < 65536; ++b) {
        const auto bits = static_cast<std::uint16_t>(b);
        const double sign = (bits & 0x8000) ? -1 : 1;
        {
            const int e = (bits >> 10) & 0x1F, m = bits & 0x3FF;
            const double want = e == 31  ? (m ? std::nan("") : sign * HUGE_VAL)
                                : e == 0 ? sign * std::ldexp(m, -24)
                                         : sign * std::ldexp(1024 + m, e - 25);
            const float got = halfToFloat(bits);
            if (std::isnan(want)) {
                EXPECT_TRUE(std::isnan(got)) << std::hex << b;
            } else {
                EXPECT_EQ(got, static_cast<float>(want)) << std::hex << b;
                EXPECT_EQ(std::signbit(got), sign < 0) << std::hex << b;  // -0 stays -0
            }
        }
        {
            const int e = (bits >> 7) & 0xFF, m = bits & 0x7F;
            const double want = e == 255 ? (m ? std::nan("") : sign * HUGE_VAL)
                                : e == 0 ? sign * std::ldexp(m, -133)
                                         : sign * std::ldexp(128 + m, e - 134);
            const float got = bfloat16ToFloat(bits);
            if (std::isnan(want)) {
                EXPECT_TRUE(std::isnan(got)) << std::hex << b;
            } else {
                EXPECT_EQ(got, static_cast<float>(want)) << std::hex << b;
                EXPECT_EQ(std::signbit(got), sign < 0) << std::hex << b;
            }
        }
    }
}
