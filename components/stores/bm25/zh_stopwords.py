"""Chinese stopwords for BM25: function words only, so content words survive.

bm25s' Chinese list (841 entries) also removes content words such as 处理, 安全, 应用, 使用, 复杂, which
queries need. This list keeps to particles, pronouns, conjunctions, prepositions, degree adverbs, auxiliary
verbs, measure words and question words — the words that carry no topic in a passage or a question.
"""

_WORDS = """
的 地 得 之 了 着 过 吗 呢 吧 啊 呀 嘛 哦 么 啦 哈 呗 罢了 而已
我 你 您 他 她 它 我们 你们 他们 她们 它们 咱们 自己 人家 大家 别人 其 其他 其它 其余 其中
这 那 这个 那个 这些 那些 这样 那样 这么 那么 这种 那种 这里 那里 这儿 那儿 此 该 本 各 每 某
哪 哪里 哪儿 哪个 哪些 哪种 什么 怎么 怎样 怎么样 如何 为什么 为何 多少 几 是否 是不是 有没有 请问
和 与 及 以及 或 或者 或是 还是 而 而且 并 并且 且 但 但是 可是 然而 不过 只是 却 则 于是 所以 因此
因为 由于 如果 假如 要是 即使 虽然 虽 尽管 无论 不管 只要 只有 除了 除非 既然 那么 然后 接着 从而 以便
在 于 从 自 自从 向 往 朝 对 对于 关于 至于 把 被 给 让 叫 由 以 为 为了 按 按照 根据 通过 经过 随着
跟 同 比 离 沿着 到 直到 当 趁 靠 用
是 有 没 没有 不 别 无 非 也 又 还 就 都 才 只 仅 再 更 最 很 太 极 挺 十分 非常 比较 相当 特别 尤其 几乎
已 已经 曾 曾经 正 正在 将 将要 会 能 能够 可 可以 可能 要 想 应 应该 应当 必须 需要 得以 敢 肯
一 一个 一些 一种 一样 一直 一般 个 些 种 位 等 等等 之一 所 所有 全部 一切 任何 各种 各个
上 下 里 内 中 外 前 后 时 时候 以上 以下 以前 以后 之前 之后 之间 期间 当时 同时
即 即是 就是 便 乃 之所以 所谓 例如 比如 譬如 啥 咋 嗯 哎 喂
"""

STOPWORDS_ZH: frozenset[str] = frozenset(_WORDS.split())
