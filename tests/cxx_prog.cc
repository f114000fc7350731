// new/delete, arrays, aligned new and the standard containers under
// omalloc.  Exits 0 when every block is sound.
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

struct alignas(256) Wide {
	unsigned char b[300];
};

int
main()
{
	std::vector<std::unique_ptr<Wide>> w;
	for (int i = 0; i < 200; i++) {
		w.emplace_back(new Wide());
		std::uintptr_t a =
		    reinterpret_cast<std::uintptr_t>(w.back().get());
		if (a % 256 != 0) {
			std::fprintf(stderr, "aligned new misaligned\n");
			return 1;
		}
		w.back()->b[299] = static_cast<unsigned char>(i);
	}
	std::map<std::string, std::vector<int>> m;
	for (int i = 0; i < 20000; i++)
		m[std::to_string(i % 997)].push_back(i);
	int *a = new int[100000]();
	for (int i = 0; i < 100000; i++)
		if (a[i] != 0)
			return 1;
	delete[] a;
	auto *big = new (std::align_val_t(4096)) char[10000];
	if (reinterpret_cast<std::uintptr_t>(big) % 4096 != 0)
		return 1;
	::operator delete[](big, std::align_val_t(4096));
	for (int i = 0; i < 200; i++)
		if (w[i]->b[299] != static_cast<unsigned char>(i))
			return 1;
	std::printf("c++: ok (%zu keys)\n", m.size());
	return 0;
}
