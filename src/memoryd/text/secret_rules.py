"""The secret families redaction knows, by format: a prefix or shape that only that kind of token has.

The list follows the families of gitleaks' public rule set (config/gitleaks.toml) and the
detect-secrets plugins, written for memoryd: each rule has lower-case `keywords`, and its regex runs
only when one of them occurs in the text (gitleaks' prefilter), so ~100 families cost a few
substring checks on ordinary prose. Tokens without a prefix of their own (Twilio auth tokens, Okta,
Datadog, Heroku keys…) are found by `PROVIDERS` + context in `redact.py`: a provider or secret word,
then an assignment, then a value that looks random.

Each rule: (kind, keywords, regex). The whole match is the secret; a match glued to a longer word
is ignored (`task-…` is no `sk-` key).
"""

from __future__ import annotations

__all__ = ["PREFIX_RULES", "PROVIDERS", "SECRET_WORDS"]

_HEX = "[0-9a-fA-F]"
PREFIX_RULES: list[tuple[str, tuple[str, ...], str]] = [
    # LLM and AI platforms
    ("anthropic_key", ("sk-ant-",), r"sk-ant-[A-Za-z0-9_-]{20,}"),
    ("openai_key", ("sk-",), r"sk-(?:proj-|svcacct-|admin-|or-v1-|None-)?(?=[A-Za-z0-9_-]{0,64}?\d)[A-Za-z0-9_-]{20,}"),
    ("huggingface_token", ("hf_",), r"hf_[A-Za-z0-9]{30,40}"),
    ("huggingface_token", ("api_org_",), r"api_org_[A-Za-z0-9]{30,40}"),
    ("xai_key", ("xai-",), r"xai-[A-Za-z0-9]{40,100}"),
    ("groq_key", ("gsk_",), r"gsk_[A-Za-z0-9]{40,60}"),
    ("replicate_token", ("r8_",), r"r8_[A-Za-z0-9]{35,40}"),
    ("perplexity_key", ("pplx-",), r"pplx-[A-Za-z0-9]{40,56}"),
    ("langsmith_key", ("lsv2_",), r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
    ("pinecone_key", ("pcsk_",), r"pcsk_[A-Za-z0-9_]{40,}"),
    # source hosting and CI
    ("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_[A-Za-z0-9]{30,255}"),
    ("github_token", ("github_pat_",), r"github_pat_[A-Za-z0-9_]{22,255}"),
    ("gitlab_token", ("glpat-", "gldt-", "glft-", "glrt-", "glcbt-", "glptt-", "gloas-", "glsoat-", "glagent-",
                      "glimt-", "glffct-"),
     r"gl(?:pat|dt|ft|rt|cbt|ptt|oas|soat|agent|imt|ffct)-[\w-]{20,300}(?:\.[0-9a-z]{9})?"),
    ("gitlab_token", ("gr1348941",), r"GR1348941[\w-]{20,}"),
    ("bitbucket_token", ("atbb",), r"ATBB[A-Za-z0-9]{28,40}"),
    ("atlassian_token", ("atatt3",), r"ATATT3[\w=-]{60,260}"),
    ("circleci_token", ("ccipat_",), r"CCIPAT_[\w]{20,24}_[a-f0-9]{40}"),
    ("buildkite_token", ("bkua_",), r"bkua_[a-f0-9]{40}"),
    ("sourcegraph_token", ("sgp_",), r"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}"),
    ("docker_hub_token", ("dckr_pat_",), r"dckr_pat_[\w-]{27,}"),
    ("npm_token", ("npm_",), r"npm_[A-Za-z0-9]{36}"),
    ("pypi_token", ("pypi-ageichlwas5vcmc",), r"pypi-AgEIcHlwaS5vcmc[\w-]{50,}"),
    ("rubygems_token", ("rubygems_",), r"rubygems_[a-f0-9]{48}"),
    ("clojars_token", ("clojars_",), r"(?i:CLOJARS_)[a-z0-9]{60}"),
    ("octopus_key", ("api-",), r"API-[A-Z0-9]{26}(?![A-Za-z0-9])"),
    ("artifactory_token", ("akcp", "cmvmd"), r"AKCp[A-Za-z0-9]{69}|cmVmd[A-Za-z0-9]{59}"),
    ("postman_key", ("pmak-",), r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}"),
    ("readme_key", ("rdme_",), r"rdme_[a-z0-9]{70}"),
    ("pulumi_token", ("pul-",), r"pul-[a-f0-9]{40}"),
    ("prefect_key", ("pnu_",), r"pnu_[A-Za-z0-9]{36}"),
    ("scalingo_token", ("tk-us-",), r"tk-us-[\w-]{48}"),
    ("terraform_token", ("atlasv1",), r"[A-Za-z0-9]{14}\.atlasv1\.[\w=-]{60,70}"),
    ("vault_token", ("hvs.", "hvb.", "hvr."), r"hv[sbr]\.[\w-]{24,300}"),
    ("doppler_token", ("dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."),
     r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}"),
    ("infracost_key", ("ico-",), r"ico-[A-Za-z0-9]{32}"),
    ("harness_token", ("pat.", "sat."), r"(?:pat|sat)\.[\w-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}"),
    # cloud
    ("aws_access_key", ("akia", "asia", "abia", "acca", "a3t"), r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}"),
    ("google_api_key", ("aiza",), r"AIza[\w-]{35}"),
    ("google_oauth_secret", ("gocspx-",), r"GOCSPX-[\w-]{28}"),
    ("google_oauth_token", ("ya29.",), r"ya29\.[\w-]{30,}"),
    ("google_refresh_token", ("1//0",), r"1//0[\w-]{40,}"),
    ("firebase_server_key", ("apa91b",), r"AAAA[\w-]{7}:APA91b[\w-]{100,}"),
    ("azure_ad_client_secret", ("q~",), r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}"),
    ("digitalocean_token", ("dop_v1_", "doo_v1_", "dor_v1_"), r"do[opr]_v1_[a-f0-9]{64}"),
    ("alibaba_access_key", ("ltai",), r"LTAI[A-Za-z0-9]{20}"),
    ("heroku_key", ("hrku-aa",), r"HRKU-AA[\w-]{58}"),
    ("cloudflare_origin_key", ("v1.0-",), r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}"),
    ("databricks_token", ("dapi",), r"dapi[a-f0-9]{32}(?:-\d)?"),
    ("dynatrace_token", ("dt0c01.",), r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    ("flyio_token", ("fo1_", "fm1", "fm2_"), r"fo1_[\w-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3}"),
    ("planetscale_token", ("pscale_",), r"pscale_(?:tkn|oauth|pw)_[\w=.-]{32,64}"),
    ("supabase_token", ("sbp_", "sb_secret_"), r"sbp_[a-f0-9]{40}|sb_secret_[\w-]{30,}"),
    ("render_key", ("rnd_",), r"rnd_[A-Za-z0-9]{32}"),
    ("tailscale_key", ("tskey-",), r"tskey-(?:api|auth|client|webhook)-[A-Za-z0-9]{8,}-[A-Za-z0-9]{16,}"),
    ("openshift_token", ("sha256~",), r"sha256~[\w-]{43}"),
    ("age_secret_key", ("age-secret-key-1",), r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("onepassword_key", ("a3-", "ops_"),
     r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}|ops_eyJ[A-Za-z0-9+/]{100,}={0,3}"),
    # messaging, e-mail, SaaS
    ("slack_token", ("xox",), r"xox[abposer]-(?:\d+-)?[A-Za-z0-9-]{10,}"),
    ("slack_token", ("xapp-",), r"xapp-\d-[A-Za-z0-9-]{10,}"),
    ("slack_token", ("xoxe.xox",), r"xoxe\.xox[bp]-\d-[A-Za-z0-9]{100,}"),
    ("sendgrid_key", ("sg.",), r"SG\.[\w-]{16,32}\.[\w-]{16,64}"),
    ("twilio_key", ("sk",), rf"SK{_HEX}{{32}}"),
    ("mailgun_key", ("key-", "pubkey-"), r"(?:pub)?key-(?=[0-9a-zA-Z]*\d)[0-9a-zA-Z]{32}"),
    ("mailchimp_key", ("-us",), r"[a-f0-9]{32}-us\d{1,2}"),
    ("sendinblue_key", ("xkeysib-", "xsmtpsib-"), r"x(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    ("discord_token", ("discord",), r"https://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\d+/[\w-]{50,}"),
    ("teams_webhook", ("webhook.office.com",),
     r"https://[a-z0-9]+\.webhook\.office\.com/webhookb2/[\w@-]+/IncomingWebhook/[a-z0-9]{32}/[\w-]+"),
    ("telegram_token", (":aa",), r"\d{8,10}:AA[\w-]{33}"),
    ("linear_key", ("lin_api_",), r"lin_api_[A-Za-z0-9]{40}"),
    ("notion_token", ("ntn_", "secret_"), r"ntn_\d{11}[A-Za-z0-9]{35}|secret_[A-Za-z0-9]{43}"),
    ("figma_token", ("figd_",), r"figd_[\w-]{40,}"),
    ("contentful_token", ("cfpat-",), r"CFPAT-[\w-]{43}"),
    ("frameio_token", ("fio-u-",), r"fio-u-[\w=-]{64}"),
    ("newrelic_key", ("nrak-", "nrii-", "nrjs-"), r"NRAK-[A-Z0-9]{27}|NRII-[\w-]{32}|NRJS-[a-f0-9]{19}"),
    ("sentry_token", ("sntrys_", "sntryu_"), r"sntry[su]_[A-Za-z0-9+/=_]{40,}"),
    ("grafana_token", ("glc_", "glsa_", "eyjrijoi"),
     r"glc_[A-Za-z0-9+/]{32,400}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|eyJrIjoi[A-Za-z0-9]{70,400}={0,3}"),
    ("mapbox_secret", ("sk.eyj",), r"sk\.eyJ[\w-]{50,}\.[\w-]{20,}"),
    ("maxmind_key", ("_mmk",), r"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk"),
    ("airtable_token", ("pat",), r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    ("typeform_token", ("tfp_",), r"tfp_[\w.=-]{59}"),
    ("easypost_key", ("ezak", "eztk"), r"EZ[AT]K[A-Za-z0-9]{54}"),
    ("duffel_token", ("duffel_",), r"duffel_(?:test|live)_[\w=-]{43}"),
    # payments and commerce
    ("stripe_key", ("sk_", "rk_"), r"[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,99}"),
    ("stripe_webhook_secret", ("whsec_",), r"whsec_[A-Za-z0-9]{24,}"),
    ("square_token", ("sq0atp-", "sq0csp-", "eaaa"), r"sq0(?:atp|csp)-[\w-]{22,60}|EAAA[\w-]{60}"),
    ("shopify_token", ("shpat_", "shpca_", "shppa_", "shpss_"), r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ("shippo_token", ("shippo_",), r"shippo_(?:live|test)_[a-fA-F0-9]{40}"),
    ("flutterwave_key", ("flwseck", "flwpubk"), r"FLW(?:SECK|PUBK)_TEST-[a-hA-H0-9]{12,32}(?:-X)?"),
    ("razorpay_key", ("rzp_",), r"rzp_(?:live|test)_[A-Za-z0-9]{14,}"),
    ("braintree_token", ("access_token$",), r"access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}"),
    ("facebook_token", ("eaac", "eaam"), r"EAA[CM][A-Za-z0-9]{100,}"),
    ("twitter_bearer", ("aaaaaaaaaaaaaaaaaaaaaa",), r"A{22}[A-Za-z0-9%]{80,110}"),
    ("adobe_secret", ("p8e-",), r"p8e-[A-Za-z0-9]{32}"),
    ("yandex_key", ("aqvn", "t1."), r"AQVN[\w-]{35,38}"),
]

# Services whose keys have no prefix of their own: their name, then an assignment, then the value.
PROVIDERS = (
    "twilio", "okta", "datadog", "heroku", "algolia", "asana", "auth0", "bitbucket", "cloudflare", "cohere",
    "coinbase", "confluent", "contentful", "discord", "dropbox", "etsy", "facebook", "fastly", "finicity",
    "flickr", "freshbooks", "gitter", "hubspot", "intercom", "jfrog", "artifactory", "kraken", "kucoin",
    "launchdarkly", "linkedin", "mailgun", "mailchimp", "mapbox", "mattermost", "messagebird", "netlify",
    "newrelic", "new relic", "nytimes", "plaid", "rapidapi", "sendbird", "sendgrid", "sentry", "snyk", "sonar",
    "squarespace", "sumo", "telegram", "travis", "twitch", "twitter", "typeform", "vercel", "yandex", "zendesk",
    "segment", "mistral", "together", "deepseek", "anthropic", "openai", "azure", "gcp", "firebase", "supabase",
    "pagerduty", "opsgenie", "circleci", "codecov", "bitly", "shopify", "paypal", "braintree", "adyen",
    "beamer", "bittrex", "droneci", "adafruit", "airtable", "alibaba", "aliyun", "tencent", "qiniu", "huawei",
    "baidu", "dingtalk", "feishu", "lark", "wechat", "weixin", "企业微信", "钉钉", "飞书", "阿里云", "腾讯云", "七牛",
    "ngrok", "pusher", "mongodb atlas", "elastic", "algolia", "nexmo", "vonage", "plivo", "postmark", "mandrill",
    "sparkpost", "amplitude", "mixpanel", "rollbar", "bugsnag", "honeybadger", "logdna", "loggly", "papertrail",
)

# Words that name a secret, English and Chinese (a value assigned to them is redacted when it looks random).
SECRET_WORDS = (
    "password", "passwd", "passphrase", "pwd", "secret", "token", "api key", "apikey", "api_key", "access key",
    "private key", "client secret", "auth", "credential", "signing key", "master key", "license key",
    "密码", "密碼", "口令", "密钥", "密鑰", "秘钥", "秘鑰", "令牌", "凭证", "憑證", "凭据", "憑據", "私钥", "私鑰", "授权码",
    "授權碼", "访问密钥", "訪問密鑰", "验证码", "token值",
    # weaker words: a value after them is a secret only when it looks generated (`redact._contextual`)
    "passcode", "creds", "key",
)
