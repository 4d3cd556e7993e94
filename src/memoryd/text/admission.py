"""The DURA admission gate and type inference: heuristic, deterministic, explainable.

Each save is scored on four axes in 0..1 — Durability (still true later?), Utility
(actionable in future work?), Relevance (specific to this project or user?), Accuracy
(concrete, grounded, not a question or chit-chat). The average decides: below the reject
threshold the save is junk, below the pending threshold it waits for review (memoryd
profile), otherwise it is stored. The reasoning names every cue that moved a score.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Dura", "infer_type", "score_dura"]

_CHITCHAT = re.compile(
    r"^\s*(ok(ay)?|thanks?( you)?|thx|hi|hello|hey|lol|yes|no|sure|cool|great|nice|good( job)?|done|"
    r"好的?|好吧|谢谢|謝謝|嗯+|哈+|收到|明白|可以|行|不客气|不客氣|你好|没问题|沒問題)[\s!.。！~]*$",
    re.IGNORECASE,
)
_QUESTION = re.compile(
    r"[?？]\s*$|^\s*(what|why|how|where|when|who|which|can|could|should|is|are|do|does)\b.*[?？]?$|"
    r"(吗|嗎|呢)[?？。]?\s*$|^(为什么|為什麼|怎么|怎麼|如何|是否)",
    re.IGNORECASE,
)
_EPHEMERAL = re.compile(
    r"\b(right now|at the moment|currently (running|working|looking)|just now|today|this morning|"
    r"for now|temporarily|in a minute|(I'?m|I am) (now|going to)|let me|I will now)\b|"
    r"(刚才|剛才|现在正在|現在正在|正在看|马上|馬上|等一下|稍后|稍後|今天先|暂时|暫時)",
    re.IGNORECASE,
)
_ACTIONABLE = re.compile(
    r"\b(use|using|don'?t|do not|never|always|must|should|prefer|avoid|run|set|configure|"
    r"requires?|decided?|switch(ed)? to|instead of|because|fix(ed)?|deploy|install|migrat\w*)\b|"
    r"(用|使用|不要|别|別|必须|必須|禁止|务必|務必|偏好|喜欢|喜歡|决定|決定|改用|换成|換成|因为|因為|"
    r"配置|设置|設置|执行|執行|运行|運行|部署|安装|安裝|修复|修復|迁移|遷移|注意)",
    re.IGNORECASE,
)
_SPECIFIC = re.compile(
    r"`[^`]+`|\b[\w\-]+\.(py|ts|tsx|js|go|rs|java|rb|md|yml|yaml|toml|json|sql|sh|cfg|ini|env)\b|"
    r"\b\w+\(\)|\b[a-z]+_[a-z_]+\b|\b[A-Z][a-z]+[A-Z]\w*\b|\b[A-Z]{2,}\w*\b|\bv?\d+(\.\d+)+\b|"
    r"--[a-z][\w-]+|/[\w.\-]+/|\b\d{2,5}\b",
)
_GENERIC = re.compile(
    r"^(the sky is blue|water is wet|code is code|it works|this is (good|bad|fine))\b|"
    r"^(天空是蓝色的|天空是藍色的)",
    re.IGNORECASE,
)

_PREFERENCE = re.compile(
    r"\b(prefers?|preferred|likes?|wants?|dislikes?|hates?|favou?rite)\b|(偏好|喜欢|喜歡|习惯|習慣|讨厌|討厭|希望)",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(decided?|decision|chose|chosen|going with|switch(ed)? (from|to)|migrat(e|ed) to|adopt(ed)?|"
    r"we('| wi)ll use|instead of)\b|(决定|決定|决策|決策|选用|選用|改用|换成|換成|切到|采用|採用|迁移到|遷移到)",
    re.IGNORECASE,
)
_WARNING = re.compile(
    r"\b(warning|careful|beware|caution|gotcha|pitfall|breaks?|crash(es)?|danger(ous)?|watch out)\b|"
    r"(注意|小心|警告|坑|会导致|會導致|危险|危險|千万别|千萬別)",
    re.IGNORECASE,
)
_PLAYBOOK = re.compile(
    r"\b(steps?|to (deploy|release|build|run|test|set up|reproduce)|first,|then run|playbook|how to)\b|"
    r"(步骤|步驟|流程|先.*再|执行步骤|發布流程|发布流程|部署流程)|^\s*(run|运行|運行|执行|執行)\s",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Dura:
    durability: float
    utility: float
    relevance: float
    accuracy: float
    reasons: list[str] = field(default_factory=list)

    @property
    def average(self) -> float:
        return round((self.durability + self.utility + self.relevance + self.accuracy) / 4, 4)

    def as_dict(self) -> dict[str, float]:
        return {
            "durability": self.durability,
            "utility": self.utility,
            "relevance": self.relevance,
            "accuracy": self.accuracy,
            "average": self.average,
        }

    @property
    def reasoning(self) -> str:
        scores = ", ".join(f"{k}={v:.2f}" for k, v in self.as_dict().items())
        return f"{scores}; " + "; ".join(self.reasons) if self.reasons else scores


def _clip(x: float) -> float:
    return round(min(1.0, max(0.0, x)), 2)


def score_dura(text: str, *, source: str = "agent", entity_count: int = 0) -> Dura:
    """Score a candidate memory on the four DURA axes."""
    t = text.strip()
    reasons: list[str] = []
    d = u = r = a = 0.6
    length = len(t)
    if _CHITCHAT.match(t):
        d, u, r, a = 0.1, 0.05, 0.1, 0.2
        reasons.append("chit-chat or acknowledgement, nothing to remember")
        return Dura(d, u, r, a, reasons)
    if _QUESTION.search(t):
        # A question records what is unknown, not what was learned.
        d, u, a = 0.3, 0.15, 0.05
        reasons.append("reads as a question, not a statement")
    if _EPHEMERAL.search(t):
        d -= 0.35
        reasons.append("describes a momentary state")
    if _ACTIONABLE.search(t) and not _QUESTION.search(t):
        u += 0.25
        reasons.append("actionable wording")
    specific = len(_SPECIFIC.findall(t)) + entity_count
    if specific:
        r += min(0.35, 0.12 * specific)
        a += min(0.25, 0.08 * specific)
        reasons.append(f"{specific} concrete identifier(s) or entities")
    if _GENERIC.search(t):
        r -= 0.4
        u -= 0.3
        reasons.append("generic statement, not specific to this work")
    cjk = len(re.findall(r"[\u3400-\u9fff]", t))
    weight = cjk * 2 + (length - cjk)
    if weight < 12:
        a -= 0.3
        u -= 0.2
        reasons.append("too short to stand on its own")
    elif weight > 40:
        a += 0.1
    if source == "user":
        a += 0.15
        reasons.append("stated by the user")
    return Dura(_clip(d), _clip(u), _clip(r), _clip(a), reasons)


def infer_type(text: str) -> str:
    """Best-guess memory type for saves that carry none (the HMG profile)."""
    if _PREFERENCE.search(text):
        return "preference"
    if _DECISION.search(text):
        return "decision"
    if _WARNING.search(text):
        return "warning"
    if _PLAYBOOK.search(text):
        return "playbook"
    return "fact"
