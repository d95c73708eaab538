// .npy encoding and decoding.
#include "core/base/error.hpp"
#include "core/io/npy.hpp"

#include <gtest/gtest.h>

#include <cstring>

using namespace attnviz::core;

TEST(Npy, HeaderIsAlignedAndReadable) {
    Mat m(2, 3);
    m << 1, 2, 3, 4, 5, 6.5f;
    const std::string bytes = encodeNpy(matrixTensor(m));
    EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
    const std::size_t headerLen = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    EXPECT_EQ((10 + headerLen) % 64, 0u);
    EXPECT_NE(bytes.find("'shape': (2, 3)"), std::string::npos);
    EXPECT_EQ(bytes.size(), 10 + headerLen + 6 * 4);
    const Tensor t = decodeNpy(bytes, "m.npy");
    EXPECT_EQ(t.shape, (std::vector<long long>{2, 3}));
    EXPECT_EQ(t.data[5], 6.5f);
}

TEST(Npy, StackAndOneDimensionalShapes) {
    Mat a = Mat::Constant(2, 2, 1), b = Mat::Constant(2, 2, 2);
    const Tensor s = stackTensor({&a, &b});
    EXPECT_EQ(s.shape, (std::vector<long long>{2, 2, 2}));
    EXPECT_EQ(s.data[4], 2.0f);
    Tensor v;
    v.shape = {3};
    v.data = {1, 2, 3};
    EXPECT_NE(encodeNpy(v).find("'shape': (3,)"), std::string::npos);
    EXPECT_EQ(decodeNpy(encodeNpy(v), "v").shape, (std::vector<long long>{3}));
}

TEST(Npy, BadFilesGiveClearErrors) {
    Mat m = Mat::Constant(2, 2, 1);
    const std::string good = encodeNpy(matrixTensor(m));
    const auto message = [](const std::string& bytes) {
        try {
            decodeNpy(bytes, "w.npy");
        } catch (const InputError& e) {
            return e.message();
        }
        return std::string();
    };
    EXPECT_EQ(message("hello world"), "w.npy: not a .npy file (wrong magic bytes)");
    EXPECT_EQ(message(good.substr(0, good.size() - 3)).rfind("w.npy: truncated data", 0), 0u);
    std::string i8 = good;
    i8.replace(i8.find("<f4"), 3, "<i8");
    EXPECT_EQ(message(i8), "w.npy: dtype '<i8' is not supported (expected float32 '<f4' or float64 '<f8')");
    std::string fortran = good;
    fortran.replace(fortran.find("False"), 5, "True ");
    EXPECT_EQ(message(fortran), "w.npy: Fortran-ordered arrays are not supported (save with C order)");
    std::string nan = good;
    const float q = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(nan.data() + nan.size() - 4, &q, 4);
    EXPECT_EQ(message(nan), "w.npy: value #3 is not a finite float");
    EXPECT_EQ(message(good.substr(0, 20)), "w.npy: truncated .npy header");
}

// The header alone: dtype, order, shape, where the data starts and how many bytes it takes.
TEST(Npy, HeaderParsedWithoutTheData) {
    const std::string f2 = npyHeader({3, 4, 5}, "<f2");
    const NpyHeader h = parseNpyHeader(std::as_bytes(std::span(f2.data(), f2.size())), "h.npy");
    EXPECT_EQ(h.dtype, NpyDType::F16);
    EXPECT_EQ(h.descr, "'<f2'");
    EXPECT_FALSE(h.fortranOrder);
    EXPECT_EQ(h.shape, (std::vector<long long>{3, 4, 5}));
    EXPECT_EQ(h.dataOffset, f2.size());
    EXPECT_EQ(h.dataOffset % 64, 0u);
    EXPECT_EQ(h.elements, 60u);
    EXPECT_EQ(h.dataBytes, 120u);  // 60 halves
    // version 2: a 4-byte header length
    std::string v2 = "\x93NUMPY\x02";
    v2 += '\0';
    const std::string dict = "{'descr': '>f4', 'fortran_order': True, 'shape': (2, 0), }\n";
    v2 += static_cast<char>(dict.size());
    v2 += std::string(3, '\0');
    v2 += dict;
    const NpyHeader b = parseNpyHeader(std::as_bytes(std::span(v2.data(), v2.size())), "b.npy");
    EXPECT_EQ(b.dtype, NpyDType::Other);
    EXPECT_TRUE(b.fortranOrder);
    EXPECT_EQ(b.dataOffset, 12 + dict.size());
    EXPECT_EQ(b.elements, 0u);
    // a dict written with double quotes, as Python's literal reading allows: the same header
    std::string quoted = f2;
    for (char& c : quoted)
        if (c == '\'') c = '"';
    const NpyHeader q = parseNpyHeader(std::as_bytes(std::span(quoted.data(), quoted.size())), "q.npy");
    EXPECT_EQ(q.dtype, NpyDType::F16);
    EXPECT_EQ(q.descr, "'<f2'");
    EXPECT_EQ(q.shape, (std::vector<long long>{3, 4, 5}));
    // a header length past the end
    const std::string cut = f2.substr(0, f2.size() - 1);
    EXPECT_THROW(parseNpyHeader(std::as_bytes(std::span(cut.data(), cut.size())), "c.npy"), InputError);
}
